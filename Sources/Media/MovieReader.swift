internal import CFFmpeg

/// Reads the video stream of a file and decodes every frame, in presentation order.
/// Used to verify recordings and, later, to build and export videos.
public final class MovieReader {
    private var context: UnsafeMutablePointer<AVFormatContext>?
    private let streamIndex: Int32
    private let decoder: VideoDecoder
    private let packet = Packet()
    private let picture: Picture
    private var draining = false
    public let path: String

    /// One decoded frame: its picture (valid until the next call) and where it sat in the file.
    public struct DecodedFrame {
        public let picture: Picture
        /// Presentation time in seconds from the file's start.
        public let seconds: Double
        public let isKeyframe: Bool
    }

    public init(path: String) throws(MediaError) {
        self.path = path
        let (ctx, index) = try PacketReader.openVideo(path)
        context = ctx
        streamIndex = index
        do {
            let par = ctx.pointee.streams[Int(index)]!.pointee.codecpar!
            decoder = try VideoDecoder(codecID: par.pointee.codec_id, parameters: par)
            picture = try Picture()
        } catch {
            avformat_close_input(&context)
            throw error
        }
    }

    deinit { avformat_close_input(&context) }

    public var width: Int { Int(context!.pointee.streams[Int(streamIndex)]!.pointee.codecpar.pointee.width) }
    public var height: Int { Int(context!.pointee.streams[Int(streamIndex)]!.pointee.codecpar.pointee.height) }
    public var codecName: String {
        String(cString: avcodec_get_name(context!.pointee.streams[Int(streamIndex)]!.pointee.codecpar.pointee.codec_id))
    }

    /// The next decoded frame, or nil at the end of the file. A file cut short by a crash ends
    /// at its last complete packet rather than failing.
    public func nextFrame() throws(MediaError) -> DecodedFrame? {
        guard let ctx = context else { return nil }
        let tb = ctx.pointee.streams[Int(streamIndex)]!.pointee.time_base
        while true {
            switch try decoder.receive(into: picture) {
            case .ok:
                let f = picture.frame.pointee
                let pts = f.best_effort_timestamp == cffmpeg_nopts_value() ? 0 : f.best_effort_timestamp
                return DecodedFrame(
                    picture: picture, seconds: Double(pts) * av_q2d(tb),
                    isKeyframe: f.key_frame != 0)
            case .endOfStream:
                return nil
            case .again:
                break
            }
            if draining { return nil }
            packet.unref()
            let status = av_read_frame(ctx, packet.packet)
            if status < 0 {
                draining = true
                _ = try decoder.send(nil)
                continue
            }
            if packet.packet.pointee.stream_index == streamIndex {
                _ = try decoder.send(packet)
            }
        }
    }
}
