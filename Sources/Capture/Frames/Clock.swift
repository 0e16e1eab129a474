import Glibc

/// The two clocks a recorder needs: monotonic for frame timing (never jumps), wall for
/// segment boundaries, shot instants and file names (follows NTP and the user's idea of time).
public enum Clock {
    public static func monotonicNanos() -> Int64 { read(CLOCK_MONOTONIC) }
    public static func wallNanos() -> Int64 { read(CLOCK_REALTIME) }

    private static func read(_ clock: clockid_t) -> Int64 {
        var ts = timespec()
        clock_gettime(clock, &ts)
        return Int64(ts.tv_sec) * 1_000_000_000 + Int64(ts.tv_nsec)
    }

    /// Sleeps until the monotonic clock reaches `nanos` (absolute, so repeated sleeps never drift).
    public static func sleep(untilMonotonic nanos: Int64) {
        var ts = timespec(tv_sec: Int(nanos / 1_000_000_000), tv_nsec: Int(nanos % 1_000_000_000))
        while clock_nanosleep(CLOCK_MONOTONIC, TIMER_ABSTIME, &ts, nil) == EINTR {}
    }
}

/// Spaces a live camera's frames at its frame rate in real time (synthetic and file cameras):
/// frame k is due at start + k·interval, so a late frame never shifts the ones after it.
struct FramePacer {
    private let startNanos = Clock.monotonicNanos()
    private let intervalNanos: Int64
    private(set) var sequence: UInt64 = 0

    init(frameRate: Double) {
        intervalNanos = Int64(1_000_000_000 / frameRate)
    }

    /// Waits until the next frame is due, or `timeoutNanos` if that comes first; true when due.
    mutating func waitForNextFrame(timeoutNanos: Int64) -> Bool {
        let due = startNanos + Int64(sequence) * intervalNanos
        let now = Clock.monotonicNanos()
        if due > now + timeoutNanos {
            Clock.sleep(untilMonotonic: now + timeoutNanos)
            return false
        }
        Clock.sleep(untilMonotonic: due)
        sequence += 1
        return true
    }
}
