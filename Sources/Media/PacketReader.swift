internal import CFFmpeg

/// Reads the compressed packets of a file's video stream without decoding them: for counting
/// frames cheaply (crash recovery) and for joining files by stream copy (export).
public final class PacketReader {
    private var context: UnsafeMutablePointer<AVFormatContext>?
    private let streamIndex: Int32
    private let timeBase: AVRational
    public let path: String
    /// The stream's codec parameters, for a muxer writing the same packets.
    public let stream: StreamDescription

    public init(path: String) throws(MediaError) {
        self.path = path
        let (ctx, index) = try Self.openVideo(path)
        context = ctx
        streamIndex = index
        let st = ctx.pointee.streams[Int(index)]!
        timeBase = st.pointee.time_base
        stream = StreamDescription(copying: st.pointee.codecpar)
    }

    /// Opens a file and finds its video stream; on failure nothing stays open.
    static func openVideo(_ path: String) throws(MediaError) -> (UnsafeMutablePointer<AVFormatContext>, Int32) {
        var ctx: UnsafeMutablePointer<AVFormatContext>? = nil
        try check(avformat_open_input(&ctx, path, nil, nil), "open \(path)")
        do {
            try check(avformat_find_stream_info(ctx, nil), "read stream info of \(path)")
            let index = av_find_best_stream(ctx, AVMEDIA_TYPE_VIDEO, -1, -1, nil, 0)
            try check(index, "find video stream in \(path)")
            return (ctx!, index)
        } catch {
            avformat_close_input(&ctx)
            throw error
        }
    }

    deinit { avformat_close_input(&context) }

    /// Reads the next video packet into `packet`, its time rescaled to `VideoEncoder.timeBase`
    /// (1/90000 s) from the file's start. False at the end (or where a cut-short file stops).
    public func next(into packet: Packet) -> Bool {
        guard let ctx = context else { return false }
        while true {
            packet.unref()
            guard av_read_frame(ctx, packet.packet) >= 0 else { return false }
            guard packet.packet.pointee.stream_index == streamIndex else { continue }
            let p = packet.packet
            let target = VideoEncoder.timeBase.av
            if p.pointee.pts == cffmpeg_nopts_value() { p.pointee.pts = p.pointee.dts }
            p.pointee.pts = av_rescale_q(p.pointee.pts, timeBase, target)
            p.pointee.dts = p.pointee.dts == cffmpeg_nopts_value() ? p.pointee.pts : av_rescale_q(p.pointee.dts, timeBase, target)
            p.pointee.duration = av_rescale_q(p.pointee.duration, timeBase, target)
            p.pointee.stream_index = 0
            return true
        }
    }
}
