import CheckedMath
import Synchronization

/// One camera's timeline across its sessions and the recorder's runs: the wall time of the last
/// frame it delivered, so that no frame of a later session is placed at or before it. A network
/// camera's times are placed (`CameraClock`), not read from a kernel clock, and may lie up to
/// half a second ahead of their arrival (jitter smoothing, a squeezed burst): a new connection,
/// or a new process after a kill, could place its first frames before the last ones already
/// recorded, and two files of the camera would overlap (found by `Scripts/chaos`: a kill -9 and
/// a start 0.4 s later). The capture thread moves such a session's times past the last frame
/// (`TimelineShift`). Set at start from the index (the newest recording of the camera), then by
/// the capture thread on every frame: one atomic load and store.
public final class CameraTimeline: Sendable {
    private let lastWall = Atomic<Int64>(.min)

    public init() {}

    /// The camera's frames up to `wallNanos` are recorded (the newest recording's end at start).
    public func recorded(until wallNanos: Int64) {
        var current = lastWall.load(ordering: .relaxed)
        while wallNanos > current {
            let (exchanged, original) = lastWall.compareExchange(expected: current, desired: wallNanos, ordering: .relaxed)
            if exchanged { return }
            current = original
        }
    }

    /// The wall time of the last frame delivered or recorded (`Int64.min`: none).
    var lastWallNanos: Int64 { lastWall.load(ordering: .relaxed) }
}

/// A session's shift of its frames' times past its camera's timeline (capture thread only).
/// The shift covers what a placed time may lie ahead of its arrival and no more
/// (`maximumNanos`: a wall-clock step back is not a placement, and is not hidden), and goes at
/// `decayPerMille` of each frame step, so times stay increasing and are the session's own again
/// within a minute.
struct TimelineShift {
    static let maximumNanos: Int64 = 2_000_000_000
    static let decayPerMille: Int64 = 10
    /// The least distance kept from the last recorded frame.
    static let marginNanos: Int64 = 1_000_000

    private var shift: Int64 = 0
    private var previousMonotonic: Int64?

    /// Moves `frame` past the timeline's last frame when it would not be after it, and records it.
    mutating func place(_ frame: CapturedFrame, after timeline: CameraTimeline) {
        let step = previousMonotonic.flatMap { frame.monotonicNanos.subtracting($0) }.map { max(0, $0) } ?? 0
        previousMonotonic = frame.monotonicNanos
        shift = max(0, shift - min(step / 1000 * Self.decayPerMille, shift))
        let last = timeline.lastWallNanos
        if last != .min, let needed = last.adding(Self.marginNanos).flatMap({ $0.subtracting(frame.wallNanos) }),
           needed > shift, needed <= Self.maximumNanos {
            shift = needed
        }
        if shift > 0 { frame.shiftTimes(by: shift) }
        timeline.recorded(until: frame.wallNanos)
    }
}
