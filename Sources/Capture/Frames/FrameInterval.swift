/// A camera's frame interval, learnt from the spacing of its frames: an average that follows
/// slowly (1/16 of each new step), so one late frame does not move it, over steps a camera
/// can have (1 ms to 2 s; longer ones are pauses, not intervals).
struct FrameInterval: Sendable {
    static let range: ClosedRange<Int64> = 1_000_000...2_000_000_000
    private(set) var nanos: Int64?

    init() {}

    /// An interval stored as nanoseconds, 0 for none yet (`SharedCounter` keeps it in an atomic).
    init(storedNanos: Int64) { nanos = Self.range.contains(storedNanos) ? storedNanos : nil }

    mutating func learn(_ step: Int64) {
        guard Self.range.contains(step) else { return }
        guard let current = nanos else {
            nanos = step
            return
        }
        nanos = current + (step - current) / 16
    }

    /// Frames per second, rounded to a hundredth (12.5, 29.97).
    var framesPerSecond: Double? {
        nanos.map { (1e11 / Double($0)).rounded() / 100 }
    }
}
