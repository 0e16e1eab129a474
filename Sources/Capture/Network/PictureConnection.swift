import Media
import RTSP

/// One picture as a network camera sent it: every NAL unit of an H.264/H.265 access unit
/// (Annex B), or one JPEG.
struct NetworkPicture {
    var byteCount: Int
    /// Times in 1/90000 s; nil when the camera sent none (MJPEG over HTTP) or the demuxer
    /// did not know them yet.
    var pts: Int64?
    var dts: Int64?
    var keyframe: Bool
    /// When the picture arrived, if it was held back after that (monotonic); nil: just now.
    var arrivalMonotonic: Int64? = nil
}

/// A connection to a network camera that delivers whole pictures into a frame's storage.
protocol PictureConnection: AnyObject {
    /// The camera's address without credentials.
    var address: String { get }
    /// The video's codec parameters as known at connection (parameter sets may come later, in-band).
    var stream: StreamDescription { get }
    /// What the camera sends, or nil for a codec Vigil cannot record without decoding.
    var format: PixelFormat? { get }
    var frameRate: Double? { get }
    var audioCodec: String? { get }
    /// Writes the next picture into `frame.storage`, waiting at most until `deadlineNanos` (a
    /// `.timeout` then means no video until the deadline).
    func readPicture(into frame: CapturedFrame, deadlineNanos: Int64) throws(NetworkError) -> NetworkPicture
}

enum PictureConnections {
    /// Connects to `url`: RTSP over TCP through Vigil's own client (`RTSPClient`), which reads
    /// a camera's packets with a fraction of the system calls and parsing of libavformat's;
    /// everything else (HTTP MJPEG, RTSP over UDP, rtsps://, a codec the client does not
    /// depacketize) through libavformat. `needsDemuxer` is set when the camera turned out to
    /// be of the last kind, so that the next connection goes straight to libavformat.
    static func open(url: String, settings: NetworkCamera.Settings, interrupt: NetworkInterrupt, needsDemuxer: inout Bool) throws(NetworkError) -> any PictureConnection {
        if settings.transport == .tcp, !needsDemuxer, let address = RTSPAddress(url) {
            do {
                return try RTSPClient(address, address: redactedAddress(url), timeoutNanos: settings.connectTimeoutNanos, interrupt: interrupt)
            } catch {
                switch error {
                case .unsupportedEncoding: needsDemuxer = true  // libavformat knows more payload formats
                case .failed(let failure): throw NetworkError(address: redactedAddress(url), failure: failure)
                }
            }
        }
        let source = try NetworkSource(url: url, transport: settings.transport, timeoutNanos: settings.connectTimeoutNanos, interrupt: interrupt)
        return DemuxedPictures(source)
    }
}

/// Pictures from libavformat's demuxer, whose packets can be parts of a picture: one picture
/// can arrive as several packets (slices, parameter sets sent before each slice). The slice
/// headers tell where a picture starts; the packet that starts the next one is kept for it.
final class DemuxedPictures: PictureConnection {
    private let source: NetworkSource
    private var packet = Packet()
    private var held = Packet()
    private var heldTimes: (pts: Int64?, dts: Int64?)?
    /// A failure met while looking for the end of a picture, thrown after that picture.
    private var pendingFailure: NetworkFailure?

    init(_ source: NetworkSource) { self.source = source }

    var address: String { source.address }
    var stream: StreamDescription { source.stream }
    var format: PixelFormat? { source.format }
    var frameRate: Double? { source.frameRate }
    var audioCodec: String? { source.audioCodec }

    func readPicture(into frame: CapturedFrame, deadlineNanos: Int64) throws(NetworkError) -> NetworkPicture {
        if let failure = pendingFailure {
            pendingFailure = nil
            throw NetworkError(address: address, failure: failure)
        }
        var times: (pts: Int64?, dts: Int64?)
        if let next = heldTimes {
            swap(&packet, &held)
            heldTimes = nil
            times = next
        } else {
            times = try source.read(into: packet, deadlineNanos: deadlineNanos)
        }
        let format = source.format ?? .mjpeg
        var byteCount = try append(packet, to: frame, at: 0)
        var keyframe = format == .mjpeg || packet.isKeyframe
        var hasSlice = format == .mjpeg || AnnexB.startsPicture(packet.bytes, hevc: format == .hevc) != nil
        packet.unref()
        while format != .mjpeg {
            let next: (pts: Int64?, dts: Int64?)
            do {
                next = try source.read(into: held, deadlineNanos: deadlineNanos)
            } catch {
                pendingFailure = error.failure
                break
            }
            let starts = AnnexB.startsPicture(held.bytes, hevc: format == .hevc)
            if hasSlice && starts == true {
                heldTimes = next
                break
            }
            hasSlice = hasSlice || starts != nil
            byteCount += try append(held, to: frame, at: byteCount)
            keyframe = keyframe || held.isKeyframe
            if times.dts == nil && times.pts == nil { times = next }
            held.unref()
        }
        return NetworkPicture(byteCount: byteCount, pts: times.pts, dts: times.dts, keyframe: keyframe)
    }

    /// Copies a packet's bytes into `frame` at `offset`; returns how many. A picture is at most
    /// `RTSPLimits.pictureBytes`, whatever the camera's headers say.
    private func append(_ packet: Packet, to frame: CapturedFrame, at offset: Int) throws(NetworkError) -> Int {
        let bytes = packet.bytes
        guard offset + bytes.count <= RTSPLimits.pictureBytes else {
            throw NetworkError(address: address, failure: .badStream(RTSPViolation.pictureTooLarge(limit: RTSPLimits.pictureBytes).description))
        }
        guard frame.reserve(offset + bytes.count, keeping: offset) else {
            throw NetworkError(address: address, failure: .other("out of memory for a \(offset + bytes.count)-byte picture"))
        }
        if let base = bytes.baseAddress { (frame.storage.baseAddress! + offset).copyMemory(from: base, byteCount: bytes.count) }
        return bytes.count
    }
}
