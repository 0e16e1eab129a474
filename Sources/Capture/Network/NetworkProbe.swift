import CheckedMath
import Media
import Plumbing

/// What a network camera sends, found by connecting and reading a few seconds of its stream
/// (`vigil devices --url`, `check-config`): codec, size, measured frame rate, keyframe
/// interval, audio.
public struct NetworkProbe: Sendable, CustomStringConvertible, Encodable {
    /// The address without credentials.
    public let address: String
    public let codec: String
    public let width: Int
    public let height: Int
    /// Frames per second as measured: from the camera's timestamps when it sends them, else
    /// from the pictures' arrivals (`frameRateFromArrivals`). Never what a demuxer assumes.
    public let frameRate: Double?
    /// The rate was measured from arrivals (the camera sends no timestamps, as MJPEG over HTTP).
    public let frameRateFromArrivals: Bool
    /// Seconds between the two first keyframes (nil if fewer than two arrived in time).
    public let keyframeIntervalSeconds: Double?
    public let audioCodec: String?
    /// Whether Vigil records this stream as it is (H.264, H.265, MJPEG).
    public let isRecordable: Bool

    /// How long a probe takes at most, by default (`--timeout`).
    public static let defaultTimeoutSeconds = 10
    /// Pictures read to measure the frame rate (fewer when `measuringNanos` pass first).
    static let measuredPictures = 16
    static let measuringNanos: Int64 = 3_000_000_000

    /// Connects to `url` and reads until two keyframes and enough pictures to measure the frame
    /// rate arrived (at most `measuringNanos` of pictures), all within `timeoutNanos`: one
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
        audioCodec = source.audioCodec
        isRecordable = source.format != nil
        var keyframes: [Int64] = []
        var tickSteps: [Int64] = []
        var arrivals: [Int64] = []
        var lastTicks: Int64?
        let pool = FramePool()
        let frame = pool.take(capacity: 512 * 1024)
        let measuringEnd = min(end, SystemClocks.monotonicNanos() + Self.measuringNanos)
        while true {
            let needsKeyframes = keyframes.count < 2 && source.format != .mjpeg
            let until = needsKeyframes ? end : measuringEnd
            guard needsKeyframes || arrivals.count < Self.measuredPictures, SystemClocks.monotonicNanos() < until,
                  let picture = try? source.readPicture(into: frame, deadlineNanos: until) else { break }
            let ticks = picture.dts ?? picture.pts
            if arrivals.count < Self.measuredPictures {
                arrivals.append(SystemClocks.monotonicNanos())
                if let ticks, let last = lastTicks, let step = ticks.subtracting(last), step > 0 { tickSteps.append(step) }
                lastTicks = ticks ?? lastTicks
            }
            if picture.keyframe, let t = ticks, keyframes.last != t, keyframes.count < 2 { keyframes.append(t) }
        }
        // Only an interval a camera can have (timestamps that went back or leapt give none).
        keyframeIntervalSeconds = keyframes.count == 2 ? keyframes[1].subtracting(keyframes[0]).flatMap { (1...90_000 * 3600).contains($0) ? Double($0) / 90_000 : nil } : nil
        (frameRate, frameRateFromArrivals) = Self.measuredRate(tickSteps: tickSteps, arrivals: arrivals) ?? (source.frameRate, false)
    }

    /// The camera's timestamps' typical step (the median: one late or repeated picture does not
    /// move it), or without them the pictures' mean spacing on arrival.
    static func measuredRate(tickSteps: [Int64], arrivals: [Int64]) -> (Double, Bool)? {
        if tickSteps.count >= 4 {
            let median = tickSteps.sorted()[tickSteps.count / 2]
            guard (90...180_000).contains(median) else { return nil }
            return ((90_000 / Double(median) * 100).rounded() / 100, false)
        }
        guard arrivals.count >= 4, let span = arrivals[arrivals.count - 1].subtracting(arrivals[0]), span > 0 else { return nil }
        return ((Double(arrivals.count - 1) * 1e9 / Double(span) * 10).rounded() / 10, true)
    }

    public var description: String {
        let rate = frameRate.map { frameRateFromArrivals ? " at about \(DeviceFormat.rate($0)) fps (measured on arrival: the camera sends no timestamps)" : " at \(DeviceFormat.rate($0)) fps" }
        var lines = ["\(address)", "  video: \(codec) \(width)x\(height)" + (rate ?? "")]
        if let k = keyframeIntervalSeconds { lines.append("  keyframe every \(DeviceFormat.rate((k * 100).rounded() / 100)) s") }
        lines.append("  audio: " + (audioCodec.map { "\($0) (ignored: Vigil records video only)" } ?? "none"))
        lines.append(isRecordable ? "  recorded as it is (codec = \"copy\")" : "  Vigil cannot record \(codec) without decoding")
        return lines.joined(separator: "\n")
    }

    private enum CodingKeys: String, CodingKey {
        case address, codec, width, height, fps, fpsMeasuredOnArrival = "fps_measured_on_arrival"
        case keyframeIntervalSeconds = "keyframe_interval_seconds", audio, recordable
    }

    public func encode(to encoder: any Encoder) throws {
        var c = encoder.container(keyedBy: CodingKeys.self)
        try c.encode(address, forKey: .address)
        try c.encode(codec, forKey: .codec)
        try c.encode(width, forKey: .width)
        try c.encode(height, forKey: .height)
        try c.encode(frameRate, forKey: .fps)
        try c.encode(frameRateFromArrivals, forKey: .fpsMeasuredOnArrival)
        try c.encode(keyframeIntervalSeconds, forKey: .keyframeIntervalSeconds)
        try c.encode(audioCodec, forKey: .audio)
        try c.encode(isRecordable, forKey: .recordable)
    }
}
