import Synchronization

/// How long to wait before the next attempt to open a camera that failed: about 1 s five
/// times, 5 s five times, 10 s ten times, then every 60 s (go2rtc's ladder). A connect event
/// resets it.
public struct RetryLadder: Sendable, Equatable {
    public private(set) var failures = 0

    public init() {}

    public var nextDelaySeconds: Double {
        switch failures {
        case ..<5: return 1
        case ..<10: return 5
        case ..<20: return 10
        default: return 60
        }
    }

    public mutating func recordFailure() { failures += 1 }
    public mutating func reset() { failures = 0 }
}

/// A camera's place on its retry ladder and the instant its next attempt is due, kept by the
/// camera rather than by one connection or session: a session restarted while the camera is
/// down (a schedule, a reload that keeps the address) waits where the last one left off
/// instead of climbing the ladder again from its first rung. Shared between sessions.
final class RetrySchedule: Sendable {
    private let state = Mutex<(ladder: RetryLadder, nextAttempt: Int64)>((RetryLadder(), 0))

    /// When the next attempt may start (monotonic nanoseconds; 0: at once).
    var nextAttemptMonotonic: Int64 { state.withLock { $0.nextAttempt } }
    var failures: Int { state.withLock { $0.ladder.failures } }

    /// A failed attempt at `now`: the next is due one rung later, ±20 % so that cameras that
    /// failed together do not retry together. Returns the delay in seconds.
    func recordFailure(at now: Int64) -> Double {
        state.withLock { s in
            s.ladder.recordFailure()
            let delay = s.ladder.nextDelaySeconds * Double.random(in: 0.8...1.2)
            s.nextAttempt = now + Int64(delay * 1e9)
            return delay
        }
    }

    /// Frames flowed long enough: the next loss starts again from the first rung.
    func reset() {
        state.withLock { $0 = (RetryLadder(), 0) }
    }
}
