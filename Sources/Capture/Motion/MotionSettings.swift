/// What counts as motion (`[[motion]]`). The sensitivity presets set the thresholds, so that a
/// user has one knob; the others have sane defaults.
public struct MotionSettings: Sendable, Equatable {
    public enum Sensitivity: String, Sendable, CaseIterable { case low, medium, high }

    /// A corner of a mask polygon, as a fraction of the picture's width and height (0…1).
    public struct Point: Sendable, Equatable {
        public var x: Double
        public var y: Double
        public init(x: Double, y: Double) { (self.x, self.y) = (x, y) }
    }

    public var sensitivity: Sensitivity = .medium
    /// How much of the picture (after masks) must change, in percent.
    public var minAreaPercent = 0.5
    /// Motion shorter than this is noise.
    public var minSeconds = 0.5
    /// Quiet this long ends an event.
    public var gapSeconds = 10.0
    /// Motion that never stops (a tree in the wind, a busy road) is cut into events this long, so
    /// each can be reviewed and has its own picture and peak.
    public var maxSeconds = 300.0
    /// Regions to ignore (trees, a clock, a road).
    public var masks: [[Point]] = []
    /// Pictures analysed per second: a few are enough to see anything that moves for long.
    public var framesPerSecond = 5.0

    public init() {}

    /// A pixel has changed when it differs from the background by more than this many times
    /// the noise the detector measures…
    var noiseFactor: Double {
        switch sensitivity {
        case .low: return 5
        case .medium: return 4
        case .high: return 3
        }
    }

    /// …and by at least this many grey levels, so a clean picture does not make every flicker motion.
    var minimumDifference: Double {
        switch sensitivity {
        case .low: return 24
        case .medium: return 16
        case .high: return 10
        }
    }

    /// More than this share of the picture changing at once is the light (a lamp, the sun
    /// behind a cloud, the camera's night mode), not motion.
    var lightSwitchShare: Double { 0.6 }
}

extension MotionSettings {
    /// A mask as a user writes it: corners "x,y" separated by spaces, each coordinate in pixels
    /// of a `width`×`height` picture or in percent ("0,0 40%,0 40%,15% 0,15%").
    public static func mask(_ text: String, width: Int, height: Int) -> [Point]? {
        func coordinate(_ part: Substring, size: Int) -> Double? {
            if part.hasSuffix("%") { return Double(part.dropLast()).map { $0 / 100 } }
            return Double(part).map { $0 / Double(size) }
        }
        let points = text.split(separator: " ").map { corner -> Point? in
            let xy = corner.split(separator: ",")
            guard xy.count == 2, let x = coordinate(xy[0], size: width), let y = coordinate(xy[1], size: height),
                  (0...1).contains(x), (0...1).contains(y) else { return nil }
            return Point(x: x, y: y)
        }
        guard points.count >= 3, points.allSatisfy({ $0 != nil }) else { return nil }
        return points.compactMap { $0 }
    }
}
