import Glibc

/// The two system clocks a recorder reads, in nanoseconds (named so as not to shadow Swift's
/// `Clock` protocol): monotonic for frame timing (never jumps), wall for
/// segment boundaries, shot instants and file names (follows NTP and the user's idea of time).
public enum SystemClocks {
    public static func monotonicNanos() -> Int64 { read(CLOCK_MONOTONIC) }
    public static func wallNanos() -> Int64 { read(CLOCK_REALTIME) }
    /// Monotonic, and counting while the machine sleeps (Swift's `ContinuousClock` on Linux):
    /// for spans that must hold across a suspend, such as a lease.
    public static func bootNanos() -> Int64 { read(CLOCK_BOOTTIME) }

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
