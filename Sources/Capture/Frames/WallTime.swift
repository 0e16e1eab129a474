import Foundation
import Glibc

/// Wall-clock instants as Vigil holds them: nanoseconds since 1970-01-01 UTC in an `Int64`, in
/// the index, in file names and in the API. An `Int64` of nanoseconds ends in April 2262, and
/// Swift traps when a `Double`, a `Date` or a count of seconds beyond it is converted, stopping
/// every camera. So every conversion from outside (a query, a command-line time, a file's name or
/// modification time) goes through here, and an instant outside `range` is refused or clamped,
/// never converted.
public enum WallTime {
    /// 1970-01-01T00:00:00Z up to the last nanosecond of 2261: what Vigil can hold, with room to
    /// add a day or a segment to any instant in it without overflow.
    public static let range: ClosedRange<Int64> = 0...(latestSecond * 1_000_000_000 + 999_999_999)
    /// 2261-12-31T23:59:59Z in seconds since 1970.
    private static let latestSecond: Int64 = 9_214_646_399

    /// The range in words, for errors.
    public static let rangeText = "1970-01-01 to 2261-12-31"

    /// The instant of `date`; nil when it is outside `range` (or not a number).
    public static func nanos(_ date: Date) -> Int64? {
        nanos(seconds: date.timeIntervalSince1970)
    }

    /// The instant `seconds` after 1970; nil outside `range` (or NaN).
    public static func nanos(seconds: Double) -> Int64? {
        // The comparison is done in Double, before any conversion can trap.
        guard seconds.isFinite, seconds >= 0, seconds < Double(latestSecond + 1) else { return nil }
        return min(Int64((seconds * 1e9).rounded(.down)), range.upperBound)
    }

    /// The instant of a whole number of seconds since 1970 (`timegm`, `time_t`); nil outside `range`.
    public static func nanos(wholeSeconds seconds: Int64) -> Int64? {
        guard seconds >= 0, seconds <= latestSecond else { return nil }
        return seconds * 1_000_000_000
    }

    /// The instant of a `timespec` (a file's `st_mtim`); nil outside `range`.
    public static func nanos(_ time: timespec) -> Int64? {
        guard let whole = nanos(wholeSeconds: Int64(time.tv_sec)), (0..<1_000_000_000).contains(time.tv_nsec) else { return nil }
        return whole + Int64(time.tv_nsec)
    }

    /// `date` as an instant, moved to the nearest end of `range` when it is outside: for instants
    /// Vigil computes itself (a schedule's next change, a calendar day), never for input to check.
    public static func clamped(_ date: Date) -> Int64 {
        let seconds = date.timeIntervalSince1970
        if let nanos = nanos(seconds: seconds) { return nanos }
        return seconds > 0 ? range.upperBound : range.lowerBound
    }

    /// The `Date` of an instant (every `Int64` converts).
    public static func date(_ nanos: Int64) -> Date {
        Date(timeIntervalSince1970: Double(nanos) / 1e9)
    }
}
