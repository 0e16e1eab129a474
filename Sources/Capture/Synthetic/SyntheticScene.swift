import Synchronization

/// A scene a test can script, for a synthetic camera to film instead of its test pattern: a
/// still, textured background with sensor noise, an optional slow light ramp and sudden light
/// switch, and bright squares that cross the picture between known times. Motion detection is
/// tested against it: the script says when something moved and where.
public final class SyntheticScene: Sendable {
    /// A square crossing the picture. Positions are fractions of the picture (0…1).
    public struct Object: Sendable {
        /// Seconds after the camera started filming.
        public var enters: Double
        public var leaves: Double
        /// The top edge, and the left edge at `enters` and at `leaves`.
        public var top: Double
        public var fromLeft: Double
        public var toLeft: Double
        /// The side, as a fraction of the picture's height.
        public var size: Double

        public init(enters: Double, leaves: Double, top: Double, fromLeft: Double = 0.05, toLeft: Double = 0.75, size: Double = 0.2) {
            (self.enters, self.leaves, self.top, self.fromLeft, self.toLeft, self.size) = (enters, leaves, top, fromLeft, toLeft, size)
        }
    }

    public let objects: [Object]
    /// Grey levels the light rises by each second (dawn).
    public let rampPerSecond: Double
    /// When the light jumps up by 90 grey levels (a lamp switched on).
    public let lightSwitchAt: Double?
    /// The objects' script starts again this often (nil: it plays once).
    public let repeatSeconds: Double?
    /// Paints each frame's sequence number over the top half (`SequencePattern`), so a test can
    /// tell which frames a file holds; that half changes every frame, so a test masks it.
    public let showsSequence: Bool
    /// When the camera started filming (wall clock, Unix nanoseconds): the script's zero.
    private let origin = Mutex<Int64?>(nil)

    public init(
        objects: [Object] = [], rampPerSecond: Double = 0, lightSwitchAt: Double? = nil, repeatSeconds: Double? = nil,
        showsSequence: Bool = false
    ) {
        self.showsSequence = showsSequence
        self.objects = objects
        self.rampPerSecond = rampPerSecond
        self.lightSwitchAt = lightSwitchAt
        self.repeatSeconds = repeatSeconds
    }

    /// `vigil demo --motion`: a square crosses the lower half from 2 s to 5 s of every 10 s.
    public static func demo() -> SyntheticScene {
        SyntheticScene(objects: [Object(enters: 2, leaves: 5, top: 0.55)], repeatSeconds: 10)
    }

    /// The wall-clock time of the script's zero, once the camera has filmed its first frame.
    public var originWallNanos: Int64? { origin.withLock { $0 } }

    /// Paints the scene at `wallNanos` into a YUYV picture (neutral chroma). `noise` is the
    /// generator's state, kept by the stream.
    func paint(into base: UnsafeMutableRawPointer, width: Int, height: Int, sequence: UInt64, wallNanos: Int64, noise: inout UInt64) {
        let zero = origin.withLock { o -> Int64 in
            if o == nil { o = wallNanos }
            return o!
        }
        let t = Double(wallNanos - zero) / 1e9
        var light = 60 + rampPerSecond * t
        if let at = lightSwitchAt, t >= at { light += 90 }
        let p = base.assumingMemoryBound(to: UInt8.self)
        let cell = max(4, width / 20)
        for y in 0..<height {
            let row = p + y * width * 2
            for x in 0..<width {
                // A checkerboard texture, and noise of ±4 grey levels (xorshift: cheap, repeatable).
                noise ^= noise << 13
                noise ^= noise >> 7
                noise ^= noise << 17
                let texture = Double((x / cell + y / cell) % 2) * 30
                let value = light + texture + Double(Int(noise % 9) - 4)
                row[x * 2] = UInt8(max(0, min(255, value)))
                row[x * 2 + 1] = 128
            }
        }
        let scripted = repeatSeconds.map { t.truncatingRemainder(dividingBy: $0) } ?? t
        for o in objects where scripted >= o.enters && scripted < o.leaves {
            let progress = (scripted - o.enters) / max(0.001, o.leaves - o.enters)
            let side = Int(o.size * Double(height))
            let left = Int((o.fromLeft + (o.toLeft - o.fromLeft) * progress) * Double(width))
            let top = Int(o.top * Double(height))
            for y in max(0, top)..<min(height, top + side) {
                for x in max(0, left)..<min(width, left + side) { p[y * width * 2 + x * 2] = 230 }
            }
        }
        if showsSequence {
            let bits = SequencePattern.bits(for: sequence)
            for i in 0..<(SequencePattern.columns * SequencePattern.rows) {
                let b = SequencePattern.block(i, width: width, height: height)
                let luma = bits & (1 << (31 - UInt32(i))) != 0 ? SequencePattern.bright : SequencePattern.dark
                for y in b.y..<min(height, b.y + b.height) {
                    for x in b.x..<min(width, b.x + b.width) { p[y * width * 2 + x * 2] = luma }
                }
            }
        }
    }
}
