import CheckedMath
import Media

/// What a video file holds: its frames and the time from the first to the last, read from its
/// packets (cheap: nothing is decoded; what recovery and `vigil verify` use) or by decoding
/// every frame (`vigil verify --deep`).
public struct VideoContents: Sendable, Equatable {
    public var frames: Int
    /// From the first frame's timestamp to the last's.
    public var spanNanos: Int64
    public var codec: String
    public var width: Int
    public var height: Int

    /// Counts the packets without decoding them. Throws what libavformat says about a file it
    /// cannot open, and `MediaError` for timestamps no recording can have.
    public static func packets(_ path: String) throws -> VideoContents {
        let reader = try PacketReader(path: path)
        let packet = Packet()
        var frames = 0
        var first = Int64.max, last = Int64.min
        while reader.next(into: packet) {
            frames += 1
            first = min(first, packet.pts)
            last = max(last, packet.pts)
        }
        let ticks = frames == 0 ? 0 : last.subtracting(first)
        // The file's own timestamps (90 kHz) are outside input: a span past what the index can
        // hold is refused, not a trap.
        guard let ticks, let span = Nanoseconds.from(ticks: ticks, clockRate: 90_000) else {
            throw MediaError(operation: "read the timestamps of \(path)", message: "they span more than Vigil can hold")
        }
        return VideoContents(frames: frames, spanNanos: span, codec: reader.stream.codecName, width: reader.stream.width, height: reader.stream.height)
    }

    /// Decodes every frame: what a player would show. Throws at the first frame that does not decode.
    public static func decoded(_ path: String) throws -> VideoContents {
        let reader = try MovieReader(path: path)
        var frames = 0
        var first = Double.infinity, last = -Double.infinity
        while let frame = try reader.nextFrame() {
            frames += 1
            first = min(first, frame.seconds)
            last = max(last, frame.seconds)
        }
        guard let span = frames == 0 ? 0 : Nanoseconds.from(seconds: last - first) else {
            throw MediaError(operation: "decode \(path)", message: "its frames' times span more than Vigil can hold")
        }
        return VideoContents(frames: frames, spanNanos: span, codec: reader.codecName, width: reader.width, height: reader.height)
    }
}
