import CheckedMath
import Media

/// What a network camera sends, found by connecting and reading a few seconds of its stream
/// (`vigil devices --url`): codec, size, frame rate, keyframe interval, audio.
public struct NetworkProbe: Sendable, CustomStringConvertible {
    /// The address without credentials.
    public let address: String
    public let codec: String
    public let width: Int
    public let height: Int
    public let frameRate: Double?
    /// Seconds between the two first keyframes (nil if fewer than two arrived in time).
    public let keyframeIntervalSeconds: Double?
    public let audioCodec: String?
    /// Whether Vigil records this stream as it is (H.264, H.265, MJPEG).
    public let isRecordable: Bool

    /// How long a probe takes at most, by default (`--timeout`).
    public static let defaultTimeoutSeconds = 10

    /// Connects to `url` and reads until two keyframes arrived, all within `timeoutNanos`: one
    /// deadline over resolving, connecting, every request and the first pictures, so a camera
    /// that answers each step slowly cannot make it last longer. Connected but without two
    /// keyframes by then, it says what it saw; not connected by then is `.timeout`.
    public init(url: String, transport: NetworkSource.Transport = .tcp, timeoutNanos: Int64) throws(NetworkError) {
        let end = SystemClocks.monotonicNanos() + timeoutNanos
        let interrupt = NetworkInterrupt(givingUpAt: end)
        let settings = NetworkCamera.Settings(transport: transport, connectTimeoutNanos: timeoutNanos)
        var needsDemuxer = false
        let source: any PictureConnection
        do {
            source = try PictureConnections.open(url: url, settings: settings, interrupt: interrupt, needsDemuxer: &needsDemuxer)
        } catch {
            // Given up while a client said no more than "stopped": the deadline, said as such.
            throw interrupt.hasGivenUp && error.failure == .aborted ? NetworkError(address: error.address, failure: .timeout) : error
        }
        address = source.address
        codec = source.stream.codecName
        width = source.stream.width
        height = source.stream.height
        frameRate = source.frameRate
        audioCodec = source.audioCodec
        isRecordable = source.format != nil
        var keyframes: [Int64] = []
        let pool = FramePool()
        let frame = pool.take(capacity: 512 * 1024)
        while keyframes.count < 2 && source.format != .mjpeg, let picture = try? source.readPicture(into: frame, deadlineNanos: end) {
            if picture.keyframe, let t = picture.dts ?? picture.pts, keyframes.last != t { keyframes.append(t) }
        }
        // Only an interval a camera can have (timestamps that went back or leapt give none).
        keyframeIntervalSeconds = keyframes.count == 2 ? keyframes[1].subtracting(keyframes[0]).flatMap { (1...90_000 * 3600).contains($0) ? Double($0) / 90_000 : nil } : nil
    }

    public var description: String {
        var lines = ["\(address)", "  video: \(codec) \(width)x\(height)" + (frameRate.map { " at \(DeviceFormat.rate(($0 * 100).rounded() / 100)) fps" } ?? "")]
        if let k = keyframeIntervalSeconds { lines.append("  keyframe every \(DeviceFormat.rate((k * 100).rounded() / 100)) s") }
        lines.append("  audio: " + (audioCodec.map { "\($0) (ignored: Vigil records video only)" } ?? "none"))
        lines.append(isRecordable ? "  recorded as it is (codec = \"copy\")" : "  Vigil cannot record \(codec) without decoding")
        return lines.joined(separator: "\n")
    }
}
