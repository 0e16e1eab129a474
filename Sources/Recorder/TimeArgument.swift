import Foundation

/// Times given on the command line: `2026-11-22` (a local day), `2026-11-22T10:00` (local),
/// `2026-11-22T10:00Z` or with an offset, `today`, `yesterday`, `now`.
public enum TimeArgument {
    /// The instant meant, or for a bare day its start (`end: false`) or its end (`end: true`).
    public static func parse(_ text: String, end: Bool, timeZone: TimeZone = .current, now: Date = Date()) -> Date? {
        var calendar = Calendar(identifier: .gregorian)
        calendar.timeZone = timeZone
        func day(_ start: Date) -> Date { end ? calendar.date(byAdding: .day, value: 1, to: start)!.addingTimeInterval(-0.001) : start }
        switch text.lowercased() {
        case "now": return now
        case "today": return day(calendar.startOfDay(for: now))
        case "yesterday": return day(calendar.date(byAdding: .day, value: -1, to: calendar.startOfDay(for: now))!)
        default: break
        }
        let parts = text.split(separator: "T", maxSplits: 1)
        let ymd = parts[0].split(separator: "-").compactMap { Int($0) }
        guard ymd.count == 3, parts[0].count == 10, let date = calendar.date(from: DateComponents(year: ymd[0], month: ymd[1], day: ymd[2])),
              calendar.dateComponents([.year, .month, .day], from: date) == DateComponents(year: ymd[0], month: ymd[1], day: ymd[2])
        else { return nil }
        guard parts.count == 2 else { return day(date) }
        var time = String(parts[1])
        var zone = timeZone
        if time.hasSuffix("Z") || time.hasSuffix("z") {
            zone = TimeZone(identifier: "UTC")!
            time.removeLast()
        } else if let sign = time.lastIndex(where: { $0 == "+" || $0 == "-" }) {
            let offset = time[time.index(after: sign)...].split(separator: ":").compactMap { Int($0) }
            guard (1...2).contains(offset.count) else { return nil }
            let seconds = (offset[0] * 3600 + (offset.count == 2 ? offset[1] * 60 : 0)) * (time[sign] == "-" ? -1 : 1)
            guard let z = TimeZone(secondsFromGMT: seconds) else { return nil }
            zone = z
            time = String(time[..<sign])
        }
        let hms = time.split(separator: ":").compactMap { Int($0) }
        guard (2...3).contains(hms.count), hms.allSatisfy({ $0 >= 0 }), hms[0] < 24, hms[1] < 60, hms.count < 3 || hms[2] < 60 else { return nil }
        calendar.timeZone = zone
        return calendar.date(from: DateComponents(year: ymd[0], month: ymd[1], day: ymd[2], hour: hms[0], minute: hms[1], second: hms.count == 3 ? hms[2] : 0))
    }
}
