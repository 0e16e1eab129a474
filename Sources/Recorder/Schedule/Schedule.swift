import Foundation

/// When a job is active: windows in local time, active when any window is. A window is an
/// optional day part and a time range:
///
///     mon-fri 07:00-19:00        weekdays
///     sat,sun 09:00-17:00        a list of days (ranges may wrap: fri-mon)
///     22:00-06:00                every day, overnight: runs into the next morning
///     sunrise-30m-sunset+30m     from 30 min before sunrise to 30 min after sunset
///     daily sunset-sunrise       nights
///
/// A window belongs to the day it starts on. Windows are evaluated as absolute instants, so
/// daylight saving time never doubles or drops one: a local time that occurs twice (autumn)
/// means its first occurrence; one that does not exist (spring) means the first instant after
/// the gap (02:30-03:30 on the spring day runs 03:00-03:30). Sunrise and sunset come from the
/// configured location; where the sun does not rise that day (polar night) a sun window is
/// empty, where it does not set (polar day) sunrise means the day's start and sunset its end.
public struct Schedule: Sendable, Equatable {
    enum TimePoint: Equatable, Sendable {
        case clock(minutes: Int)
        case sunrise(offsetMinutes: Int)
        case sunset(offsetMinutes: Int)
    }

    struct Window: Equatable, Sendable {
        /// Calendar weekdays (1 = Sunday … 7 = Saturday).
        var days: Set<Int>
        var start: TimePoint
        var end: TimePoint
        var isSunRelative: Bool {
            if case .clock = start, case .clock = end { return false }
            return true
        }
    }

    let windows: [Window]
    let timeZone: TimeZone
    let location: GeoLocation?

    /// Active at every instant.
    public static let always = Schedule(parsed: [], timeZone: TimeZone(identifier: "UTC")!, location: nil)

    private init(parsed windows: [Window], timeZone: TimeZone, location: GeoLocation?) {
        self.windows = windows
        self.timeZone = timeZone
        self.location = location
    }

    /// Parses the windows (an empty list is `always`).
    public init(windows texts: [String], timeZone: TimeZone, location: GeoLocation?) throws(RecorderError) {
        var parsed: [Window] = []
        for text in texts {
            let window = try Self.parse(text)
            if window.isSunRelative && location == nil { throw Self.needsLocation(text) }
            parsed.append(window)
        }
        self.init(parsed: parsed, timeZone: timeZone, location: location)
    }

    /// Checks one window's text; sun-relative windows need a location.
    public static func check(window text: String, hasLocation: Bool) -> RecorderError? {
        do {
            let window = try parse(text)
            return window.isSunRelative && !hasLocation ? needsLocation(text) : nil
        } catch {
            return error
        }
    }

    public var isAlways: Bool { windows.isEmpty }

    public func isActive(at date: Date) -> Bool {
        guard !isAlways else { return true }
        let day = localDay(of: date)
        // A window that started yesterday may still run (overnight).
        for offset in [-1, 0] {
            for interval in intervals(onDay: day + offset) where interval.start <= date && date < interval.end { return true }
        }
        return false
    }

    /// The next instant after `date` at which `isActive` changes (nil for `always`, or when
    /// nothing changes within the next eight days).
    public func nextChange(after date: Date) -> Date? {
        guard !isAlways else { return nil }
        let now = isActive(at: date)
        let day = localDay(of: date)
        var boundaries: [Date] = []
        for offset in -1...8 {
            for interval in intervals(onDay: day + offset) {
                boundaries.append(interval.start)
                boundaries.append(interval.end)
            }
        }
        for boundary in boundaries.filter({ $0 > date }).sorted() where isActive(at: boundary) != now {
            return boundary
        }
        return nil
    }

    // MARK: - Evaluation

    private var calendar: Calendar {
        var c = Calendar(identifier: .gregorian)
        c.timeZone = timeZone
        return c
    }

    /// Days counted from 1970-01-01 in local time.
    private func localDay(of date: Date) -> Int {
        let c = calendar.dateComponents([.year, .month, .day], from: date)
        var utc = Calendar(identifier: .gregorian)
        utc.timeZone = TimeZone(identifier: "UTC")!
        let midnight = utc.date(from: DateComponents(year: c.year, month: c.month, day: c.day))!
        return Int((midnight.timeIntervalSince1970 / 86_400).rounded(.down))
    }

    /// The windows that start on local day `day`, as absolute intervals.
    private func intervals(onDay day: Int) -> [DateInterval] {
        let weekday = ((day + 4) % 7 + 7) % 7 + 1  // 1970-01-01 was a Thursday (5)
        var result: [DateInterval] = []
        for window in windows where window.days.contains(weekday) {
            guard let start = instant(window.start, onDay: day) else { continue }
            guard var end = instant(window.end, onDay: day) else { continue }
            if end <= start {
                // Overnight: the end is on the next day.
                guard let next = instant(window.end, onDay: day + 1), next > start else { continue }
                end = next
            }
            result.append(DateInterval(start: start, end: end))
        }
        return result
    }

    /// When a time point falls on local day `day` (nil: a sun event that does not happen).
    private func instant(_ point: TimePoint, onDay day: Int) -> Date? {
        switch point {
        case .clock(let minutes):
            return localInstant(day: day, secondsIntoDay: minutes * 60)
        case .sunrise(let offset), .sunset(let offset):
            let isRise: Bool
            if case .sunrise = point { isRise = true } else { isRise = false }
            guard let location, let noon = localInstant(day: day, secondsIntoDay: 12 * 3600) else { return nil }
            switch SunTimes.day(near: noon, at: location) {
            case .normal(let sunrise, let sunset):
                return (isRise ? sunrise : sunset).addingTimeInterval(Double(offset * 60))
            case .alwaysUp:
                return localInstant(day: isRise ? day : day + 1, secondsIntoDay: 0)
            case .alwaysDown:
                return nil
            }
        }
    }

    /// The instant whose local wall time is `secondsIntoDay` after midnight of local day `day`:
    /// the first of two (autumn), or the end of the gap for a time that does not exist (spring).
    private func localInstant(day: Int, secondsIntoDay: Int) -> Date? {
        let naive = Double(day * 86_400 + secondsIntoDay)
        let before = timeZone.secondsFromGMT(for: Date(timeIntervalSince1970: naive - 86_400))
        let after = timeZone.secondsFromGMT(for: Date(timeIntervalSince1970: naive + 86_400))
        let candidates = Set([before, after]).map { Date(timeIntervalSince1970: naive - Double($0)) }
        let valid = candidates.filter { timeZone.secondsFromGMT(for: $0) == Int(naive - $0.timeIntervalSince1970) }
        if let first = valid.min() { return first }
        // In a gap: the transition itself is the first instant after it.
        return timeZone.nextDaylightSavingTimeTransition(after: candidates.min()!)
    }

    // MARK: - Parsing

    private static let dayNames = ["sun", "mon", "tue", "wed", "thu", "fri", "sat"]
    private static let fullDayNames = ["sunday", "monday", "tuesday", "wednesday", "thursday", "friday", "saturday"]

    static func parse(_ text: String) throws(RecorderError) -> Window {
        let trimmed = text.trimmingCharacters(in: .whitespaces).lowercased()
        guard !trimmed.isEmpty else {
            throw RecorderError.schedule(message: "an empty schedule window", fix: "write a window such as \"mon-fri 07:00-19:00\"")
        }
        var days = Set(1...7)
        var range = Substring(trimmed)
        if let first = trimmed.first, first.isLetter, !trimmed.hasPrefix("sunrise"), !trimmed.hasPrefix("sunset") {
            let parts = trimmed.split(separator: " ", maxSplits: 1)
            guard parts.count == 2 else {
                throw RecorderError.schedule(
                    message: "\"\(text)\" has days but no time range",
                    fix: "add a time range, e.g. \"\(trimmed) 07:00-19:00\" (or \"sunrise-sunset\")")
            }
            days = try parseDays(String(parts[0]))
            range = parts[1]
        }
        var cursor = Substring(range.filter { !$0.isWhitespace })
        let start = try parseTime(&cursor, in: text)
        guard cursor.first == "-" else {
            throw RecorderError.schedule(message: "\"\(text)\" is not a time range", fix: "write START-END, e.g. 07:00-19:00 or sunrise-30m-sunset+30m")
        }
        cursor.removeFirst()
        let end = try parseTime(&cursor, in: text)
        guard cursor.isEmpty else {
            throw RecorderError.schedule(message: "unexpected \"\(cursor)\" in \"\(text)\"", fix: "write START-END, e.g. 07:00-19:00 or sunrise-30m-sunset+30m")
        }
        if start == end {
            throw RecorderError.schedule(message: "\"\(text)\" starts and ends at the same time", fix: "for all day leave out the schedule, or write 00:00-24:00")
        }
        return Window(days: days, start: start, end: end)
    }

    private static func parseDays(_ text: String) throws(RecorderError) -> Set<Int> {
        if ["daily", "everyday", "all"].contains(text) { return Set(1...7) }
        var days = Set<Int>()
        for item in text.split(separator: ",", omittingEmptySubsequences: false) {
            let ends = item.split(separator: "-", omittingEmptySubsequences: false)
            guard (1...2).contains(ends.count) else {
                throw RecorderError.schedule(message: "\"\(item)\" is not a day or a range of days", fix: "write e.g. mon-fri or sat,sun")
            }
            let first = try day(String(ends[0]))
            let last = ends.count == 2 ? try day(String(ends[1])) : first
            var d = first
            while true {
                days.insert(d)
                if d == last { break }
                d = d % 7 + 1
            }
        }
        return days
    }

    private static func day(_ name: String) throws(RecorderError) -> Int {
        if let i = dayNames.firstIndex(of: name) ?? fullDayNames.firstIndex(of: name) { return i + 1 }
        throw RecorderError.schedule(
            message: "unknown day \"\(name)\"\(Suggestion.phrase(for: name, among: dayNames))",
            fix: "use mon, tue, wed, thu, fri, sat, sun, ranges like mon-fri, lists like sat,sun, or daily")
    }

    private static func parseTime(_ cursor: inout Substring, in text: String) throws(RecorderError) -> TimePoint {
        for (word, isRise) in [("sunrise", true), ("sunset", false)] where cursor.hasPrefix(word) {
            cursor.removeFirst(word.count)
            var offset = 0
            if let sign = cursor.first, sign == "+" || sign == "-", let digit = cursor.dropFirst().first, digit.isASCII, digit.isNumber {
                cursor.removeFirst()
                offset = try parseOffset(&cursor, in: text) * (sign == "-" ? -1 : 1)
            }
            return isRise ? .sunrise(offsetMinutes: offset) : .sunset(offsetMinutes: offset)
        }
        let clock = cursor.prefix { $0.isNumber || $0 == ":" }
        cursor.removeFirst(clock.count)
        let parts = clock.split(separator: ":", omittingEmptySubsequences: false)
        guard parts.count == 2, (1...2).contains(parts[0].count), parts[1].count == 2,
              let h = Int(parts[0]), let m = Int(parts[1]), (0...24).contains(h), (0...59).contains(m), h < 24 || m == 0
        else {
            let shown = clock.isEmpty ? String(cursor.prefix(12)) : String(clock)
            throw RecorderError.schedule(
                message: "\"\(shown)\" is not a time of day (in \"\(text)\")",
                fix: "use HH:MM from 00:00 to 24:00, or sunrise/sunset with an offset such as sunrise-30m")
        }
        return .clock(minutes: h * 60 + m)
    }

    /// "1h30m", "45m", "2h" → minutes. Each part is checked against the 12-hour limit as it
    /// is read, so no number of digits can overflow.
    private static func parseOffset(_ cursor: inout Substring, in text: String) throws(RecorderError) -> Int {
        let limit = 12 * 60
        let tooLarge = RecorderError.schedule(message: "a sun offset must be between 1 minute and 12 hours (in \"\(text)\")", fix: "write e.g. sunrise-30m or sunset+1h30m")
        var total = 0
        var any = false
        while let first = cursor.first, first.isASCII, first.isNumber {
            let digits = cursor.prefix { $0.isASCII && $0.isNumber }
            cursor.removeFirst(digits.count)
            guard let unit = cursor.first, unit == "h" || unit == "m" else {
                throw RecorderError.schedule(message: "offset \"\(digits.prefix(12))\" needs a unit (in \"\(text)\")", fix: "write e.g. sunrise-30m or sunset+1h30m")
            }
            cursor.removeFirst()
            guard digits.count <= 4, let value = Int(digits) else { throw tooLarge }
            total += unit == "h" ? value * 60 : value
            guard total <= limit else { throw tooLarge }
            any = true
        }
        guard any else { throw tooLarge }
        return total
    }

    private static func needsLocation(_ text: String) -> RecorderError {
        RecorderError.schedule(
            message: "\"\(text)\" uses sunrise/sunset but no location is configured",
            fix: "add [location] with latitude = … and longitude = … (degrees, north and east positive)")
    }
}
