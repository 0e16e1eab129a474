import Capture
import Foundation

/// Times on the command line, and the form vigil prints them in, which is accepted back:
///
///     2026-11-22T21:51:41+01:00   RFC 3339: local time with its UTC offset (what vigil prints)
///     2026-11-22T20:51:41Z        UTC; fractions of a second (…41.250Z) and a space for T allowed
///     2026-11-22T10:00            local time (of the zone vigil runs in; seconds optional)
///     2026-11-22                  a local day: its start for --from, its end for --to
///     today, yesterday, now
public enum TimeArgument {
    /// The accepted forms, for `--help` and for errors.
    public static let forms = "2026-11-22T10:00 (local time), 2026-11-22T10:00:00+01:00 or …Z (with offset, as `vigil recordings` prints), 2026-11-22 (a day), today, yesterday, now"

    /// `date` as vigil prints it: local time with its offset, to the second. `roundingUp` for the
    /// end of a range, so feeding the printed text back covers all of it.
    public static func format(_ date: Date, timeZone: TimeZone = .current, roundingUp: Bool = false) -> String {
        let seconds = date.timeIntervalSince1970
        let whole = Date(timeIntervalSince1970: roundingUp ? seconds.rounded(.up) : seconds.rounded(.down))
        var calendar = Calendar(identifier: .gregorian)
        calendar.timeZone = timeZone
        let c = calendar.dateComponents([.year, .month, .day, .hour, .minute, .second], from: whole)
        let offset = timeZone.secondsFromGMT(for: whole)
        let zone = offset == 0 ? "Z" : (offset < 0 ? "-" : "+") + String(format: "%02d:%02d", abs(offset) / 3600, abs(offset) % 3600 / 60)
        return String(format: "%04d-%02d-%02dT%02d:%02d:%02d", c.year!, c.month!, c.day!, c.hour!, c.minute!, c.second!) + zone
    }

    /// Why a time cannot be used; `message(_:)` says so about the parameter that held it.
    public enum Problem: Error, Equatable {
        case notATime
        /// A real date, but outside what Vigil can hold (`WallTime.range`).
        case outOfRange

        /// `subject` names where the text came from: `--from 2026-13-01`, `from=0001-01-01`.
        public func message(_ subject: String) -> String {
            switch self {
            case .notATime: return "\(subject) is not a time: use RFC 3339 or \(TimeArgument.forms)"
            case .outOfRange: return "\(subject) is outside the times Vigil can hold (\(WallTime.rangeText))"
            }
        }
    }

    /// The instant meant (as `parse` reads it) in Vigil's nanoseconds, checked against
    /// `WallTime.range`: the one conversion of a time someone typed.
    public static func nanos(_ text: String, end: Bool, timeZone: TimeZone = .current, now: Date = Date()) throws(Problem) -> Int64 {
        guard let (date, fraction) = instant(text, end: end, timeZone: timeZone, now: now) else { throw .notATime }
        // The written fraction is added in integers: through a Double, 12:00:00.517 could come
        // back as 12:00:00.516999999 and miss a frame stamped at .517.
        // A whole second (any written time) is converted in integers too: a Double product is
        // exact only up to about 2115.
        let seconds = date.timeIntervalSince1970
        let isWhole = seconds.rounded(.down) == seconds && seconds.magnitude < 1e12
        guard let whole = isWhole ? WallTime.nanos(wholeSeconds: Int64(seconds)) : WallTime.nanos(date),
              case (let nanos, false) = whole.addingReportingOverflow(fraction),
              WallTime.range.contains(nanos) else { throw .outOfRange }
        return nanos
    }

    /// The instant meant, or for a bare day its start (`end: false`) or its end (`end: true`).
    public static func parse(_ text: String, end: Bool, timeZone: TimeZone = .current, now: Date = Date()) -> Date? {
        instant(text, end: end, timeZone: timeZone, now: now).map { $0.date.addingTimeInterval(Double($0.fraction) / 1e9) }
    }

    /// The instant as a date without the written fraction of a second, and that fraction in
    /// nanoseconds (0 when none was written).
    static func instant(_ text: String, end: Bool, timeZone: TimeZone, now: Date) -> (date: Date, fraction: Int64)? {
        var calendar = Calendar(identifier: .gregorian)
        calendar.timeZone = timeZone
        func day(_ start: Date) -> Date { end ? calendar.date(byAdding: .day, value: 1, to: start)!.addingTimeInterval(-0.001) : start }
        switch text.lowercased() {
        case "now": return (now, 0)
        case "today": return (day(calendar.startOfDay(for: now)), 0)
        case "yesterday": return (day(calendar.date(byAdding: .day, value: -1, to: calendar.startOfDay(for: now))!), 0)
        default: break
        }
        // ASCII digits only: fixed widths keep every number far from Int's edges.
        let pattern = /([0-9]{4})-([0-9]{2})-([0-9]{2})(?:[Tt ]([0-9]{1,2}):([0-9]{2})(?::([0-9]{2})(\.[0-9]{1,9})?)? ?([Zz]|[+-][0-9]{2}(?::?[0-9]{2})?)?)?/
        guard let m = try? pattern.wholeMatch(in: text) else { return nil }
        let ymd = DateComponents(year: Int(m.1)!, month: Int(m.2)!, day: Int(m.3)!)
        guard let midnight = calendar.date(from: ymd), calendar.dateComponents([.year, .month, .day], from: midnight) == ymd else { return nil }
        guard let hourText = m.4, let minuteText = m.5 else { return (day(midnight), 0) }
        let hour = Int(hourText)!, minute = Int(minuteText)!, second = m.6.map { Int($0)! } ?? 0
        guard hour < 24, minute < 60, second < 60 else { return nil }
        // Up to 9 digits after the point: at most 999,999,999 ns.
        let fraction = m.7.map { Int64($0.dropFirst().padding(toLength: 9, withPad: "0", startingAt: 0))! } ?? 0
        var clock = ymd
        (clock.hour, clock.minute, clock.second) = (hour, minute, second)
        guard let zoneText = m.8 else {
            return calendar.date(from: clock).map { ($0, fraction) }
        }
        var offsetSeconds = 0
        if zoneText != "Z" && zoneText != "z" {
            let digits = zoneText.dropFirst().filter { $0 != ":" }
            let hours = Int(digits.prefix(2))!, minutes = digits.count == 4 ? Int(digits.suffix(2))! : 0
            guard hours < 24, minutes < 60 else { return nil }
            offsetSeconds = (hours * 3600 + minutes * 60) * (zoneText.first == "-" ? -1 : 1)
        }
        calendar.timeZone = TimeZone(identifier: "UTC")!
        return calendar.date(from: clock).map { ($0.addingTimeInterval(-Double(offsetSeconds)), fraction) }
    }
}
