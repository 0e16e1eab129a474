import Foundation
@testable import Recorder
import Testing

private func date(_ text: String) -> Date { ISO8601DateFormatter().date(from: text)! }

/// Minute-by-minute view of a schedule over [from, to): active minutes and on/off transitions.
private func scan(_ schedule: Schedule, from: String, to: String) -> (activeMinutes: Int, starts: [Date], ends: [Date]) {
    var t = date(from)
    let end = date(to)
    var previous = schedule.isActive(at: t.addingTimeInterval(-60))
    var active = 0
    var starts: [Date] = [], ends: [Date] = []
    while t < end {
        let now = schedule.isActive(at: t)
        if now { active += 1 }
        if now && !previous { starts.append(t) }
        if !now && previous { ends.append(t) }
        previous = now
        t.addTimeInterval(60)
    }
    return (active, starts, ends)
}

@Suite struct ScheduleTests {
    private let berlin = TimeZone(identifier: "Europe/Berlin")!
    private let sydney = TimeZone(identifier: "Australia/Sydney")!

    @Test func weekdayWindowsInLocalTime() throws {
        let s = try Schedule(windows: ["mon-fri 07:00-19:00"], timeZone: berlin, location: nil)
        #expect(!s.isAlways)
        #expect(s.isActive(at: date("2026-11-23T06:00:00Z")))   // Monday 07:00 CET
        #expect(!s.isActive(at: date("2026-11-23T05:59:59Z")))
        #expect(!s.isActive(at: date("2026-11-23T18:00:00Z")))  // 19:00: the end is exclusive
        #expect(!s.isActive(at: date("2026-11-22T10:00:00Z")))  // Sunday
        #expect(s.nextChange(after: date("2026-11-22T10:00:00Z")) == date("2026-11-23T06:00:00Z"))
        #expect(s.nextChange(after: date("2026-11-23T06:00:00Z")) == date("2026-11-23T18:00:00Z"))
    }

    @Test func overnightWindowsRunIntoTheNextDayIncludingAcrossTheWeek() throws {
        let sat = try Schedule(windows: ["sat 22:00-06:00"], timeZone: berlin, location: nil)
        #expect(sat.isActive(at: date("2026-11-21T21:00:00Z")))   // Sat 22:00
        #expect(sat.isActive(at: date("2026-11-22T04:59:00Z")))   // Sun 05:59
        #expect(!sat.isActive(at: date("2026-11-22T21:30:00Z")))  // Sun 22:30: not a Saturday
        let sun = try Schedule(windows: ["sun 22:00-02:00"], timeZone: berlin, location: nil)
        #expect(sun.isActive(at: date("2026-11-23T00:30:00Z")))   // Mon 01:30, from Sunday's window
        let wrap = try Schedule(windows: ["fri-mon 12:00-13:00"], timeZone: berlin, location: nil)
        let week = scan(wrap, from: "2026-11-16T00:00:00Z", to: "2026-11-23T00:00:00Z")
        #expect(week.starts.count == 4 && week.activeMinutes == 4 * 60)
    }

    @Test func springForwardInBerlinNeitherDoublesNorLosesAWindow() throws {
        // 2026-03-29: 02:00 CET jumps to 03:00 CEST (01:00Z).
        let across = try Schedule(windows: ["01:00-04:00"], timeZone: berlin, location: nil)
        let a = scan(across, from: "2026-03-28T22:00:00Z", to: "2026-03-29T22:00:00Z")
        #expect(a.starts == [date("2026-03-29T00:00:00Z")] && a.ends == [date("2026-03-29T02:00:00Z")])
        #expect(a.activeMinutes == 120)   // the clock skipped an hour of it
        let inside = try Schedule(windows: ["02:30-03:30"], timeZone: berlin, location: nil)
        let i = scan(inside, from: "2026-03-28T22:00:00Z", to: "2026-03-29T22:00:00Z")
        #expect(i.starts == [date("2026-03-29T01:00:00Z")] && i.activeMinutes == 30)
        // The rest of the week is untouched: one window a day.
        let week = scan(across, from: "2026-03-25T22:00:00Z", to: "2026-04-01T22:00:00Z")
        #expect(week.starts.count == 7)
    }

    @Test func fallBackInBerlinHappensOnce() throws {
        // 2026-10-25: 03:00 CEST falls back to 02:00 CET (01:00Z); 02:00-03:00 happens twice.
        let inside = try Schedule(windows: ["02:15-02:45"], timeZone: berlin, location: nil)
        let i = scan(inside, from: "2026-10-24T22:00:00Z", to: "2026-10-25T23:00:00Z")
        #expect(i.starts == [date("2026-10-25T00:15:00Z")] && i.activeMinutes == 30)
        let across = try Schedule(windows: ["01:00-04:00"], timeZone: berlin, location: nil)
        let a = scan(across, from: "2026-10-24T22:00:00Z", to: "2026-10-25T23:00:00Z")
        #expect(a.starts.count == 1 && a.activeMinutes == 240)   // one window, an hour longer
    }

    @Test func southernHemisphereDaylightSaving() throws {
        // Sydney: DST starts 2026-10-04 (02:00 AEST → 03:00 AEDT), ends 2026-04-05 (03:00 AEDT → 02:00 AEST).
        let s = try Schedule(windows: ["daily 02:00-04:00"], timeZone: sydney, location: nil)
        let start = scan(s, from: "2026-10-03T12:00:00Z", to: "2026-10-04T12:00:00Z")
        #expect(start.starts.count == 1 && start.activeMinutes == 60)
        let end = scan(s, from: "2026-04-04T12:00:00Z", to: "2026-04-05T12:00:00Z")
        #expect(end.starts.count == 1 && end.activeMinutes == 180)
        #expect(s.isActive(at: date("2026-07-01T16:30:00Z")))   // 02:30 AEST in winter
    }

    @Test func nextChangeAgreesWithAMinuteScan() throws {
        let s = try Schedule(windows: ["mon-fri 07:00-19:00", "sat,sun 22:00-02:00", "wed 18:00-20:30"], timeZone: berlin, location: nil)
        var t = date("2026-10-22T00:00:00Z")
        for _ in 0..<30 {
            guard let next = s.nextChange(after: t) else { Issue.record("no next change"); return }
            let before = s.isActive(at: t)
            #expect(s.isActive(at: next) != before)
            #expect(s.isActive(at: next.addingTimeInterval(-1)) == before)
            // No change hidden in between (checked every minute).
            var probe = t
            while probe < next.addingTimeInterval(-60) {
                probe.addTimeInterval(60)
                #expect(s.isActive(at: probe) == before, "missed a change at \(probe)")
            }
            t = next
        }
        #expect(Schedule.always.nextChange(after: t) == nil && Schedule.always.isActive(at: t))
    }

    @Test func badWindowsSayWhatToWrite() {
        #expect(Schedule.check(window: "25:00-26:00", hasLocation: false)?.description.contains("\"25:00\" is not a time of day") == true)
        #expect(Schedule.check(window: "mnn-fri 07:00-19:00", hasLocation: false)?.description.contains("did you mean mon?") == true)
        #expect(Schedule.check(window: "sunrise-sunset", hasLocation: false)?.description.contains("[location]") == true)
        #expect(Schedule.check(window: "sunrise-sunset", hasLocation: true) == nil)
        #expect(Schedule.check(window: "07:00-07:00", hasLocation: false) != nil)
        #expect(Schedule.check(window: "mon-fri", hasLocation: false) != nil)
        #expect(Schedule.check(window: "sunrise-30-sunset", hasLocation: true) != nil)
        #expect(Schedule.check(window: "07:00-19:00", hasLocation: false) == nil)
        #expect(Schedule.check(window: "sat,sun 00:00-24:00", hasLocation: false) == nil)
        #expect(Schedule.check(window: "daily sunrise-30m - sunset+1h30m", hasLocation: true) == nil)
    }

    /// Offsets of any length are checked against 12 hours instead of overflowing Int.
    @Test(arguments: ["sunrise+999999999999999999h-sunset", "sunset-99999999999999999999999m-sunrise",
                      "sunrise+1h9223372036854775807m-sunset", "sunrise+153722867280912931h-sunset", "sunrise+721m-sunset"])
    func hugeSunOffsetsAreErrors(_ window: String) {
        #expect(Schedule.check(window: window, hasLocation: true)?.description.contains("between 1 minute and 12 hours") == true)
    }

    @Test func twelveHoursIsTheLargestSunOffset() {
        #expect(Schedule.check(window: "sunrise+720m-sunset", hasLocation: true) == nil)
        #expect(Schedule.check(window: "sunrise+11h60m-sunset", hasLocation: true) == nil)
    }
}

@Suite struct SunTimesTests {
    private func localTime(_ d: Date, _ zone: String) -> Int {
        var c = Calendar(identifier: .gregorian)
        c.timeZone = TimeZone(identifier: zone)!
        let parts = c.dateComponents([.hour, .minute, .second], from: d)
        return parts.hour! * 3600 + parts.minute! * 60 + parts.second!
    }

    /// Published times (timeanddate.com, rounded to the minute; NOAA's calculator agrees within
    /// a minute): Berlin 2026-06-21 04:43/21:33 CEST, New York 2026-12-21 07:16/16:32 EST,
    /// Sydney 2026-06-21 07:00/16:54 AEST.
    @Test(arguments: [
        ("Berlin", 52.52, 13.405, "Europe/Berlin", "2026-06-21T10:00:00Z", 4 * 60 + 43, 21 * 60 + 33),
        ("New York", 40.7128, -74.006, "America/New_York", "2026-12-21T17:00:00Z", 7 * 60 + 16, 16 * 60 + 32),
        ("Sydney", -33.8688, 151.2093, "Australia/Sydney", "2026-06-21T02:00:00Z", 7 * 60, 16 * 60 + 54),
    ])
    func sunriseAndSunsetWithinTwoMinutesOfPublishedTimes(
        city: String, latitude: Double, longitude: Double, zone: String, noon: String, sunrise: Int, sunset: Int
    ) {
        guard case .normal(let rise, let set) = SunTimes.day(near: date(noon), at: GeoLocation(latitude: latitude, longitude: longitude)) else {
            Issue.record("\(city): no sunrise")
            return
        }
        #expect(abs(localTime(rise, zone) - sunrise * 60) <= 120, "\(city) sunrise \(rise)")
        #expect(abs(localTime(set, zone) - sunset * 60) <= 120, "\(city) sunset \(set)")
    }

    @Test func polarDayAndNightInTromso() throws {
        let tromso = GeoLocation(latitude: 69.6496, longitude: 18.956)
        #expect(SunTimes.day(near: date("2026-06-21T10:00:00Z"), at: tromso) == .alwaysUp)
        #expect(SunTimes.day(near: date("2026-12-21T11:00:00Z"), at: tromso) == .alwaysDown)
        let oslo = TimeZone(identifier: "Europe/Oslo")!
        let daylight = try Schedule(windows: ["sunrise-sunset"], timeZone: oslo, location: tromso)
        #expect(daylight.isActive(at: date("2026-06-21T22:00:00Z")))   // midnight sun
        #expect(!daylight.isActive(at: date("2026-12-21T11:00:00Z")))  // polar night: empty
    }

    @Test func sunWindowsFollowTheSunWithOffsets() throws {
        let berlin = GeoLocation(latitude: 52.52, longitude: 13.405)
        let s = try Schedule(windows: ["sunrise-30m-sunset+30m"], timeZone: TimeZone(identifier: "Europe/Berlin")!, location: berlin)
        // 2026-06-21: sunrise 04:43 CEST = 02:43Z, so the window opens about 02:13Z.
        #expect(!s.isActive(at: date("2026-06-21T02:08:00Z")))
        #expect(s.isActive(at: date("2026-06-21T02:18:00Z")))
        #expect(s.isActive(at: date("2026-06-21T19:58:00Z")))  // sunset 19:33Z + 30 min
        #expect(!s.isActive(at: date("2026-06-21T20:08:00Z")))
        let nights = try Schedule(windows: ["sunset-sunrise"], timeZone: TimeZone(identifier: "Europe/Berlin")!, location: berlin)
        #expect(nights.isActive(at: date("2026-12-21T23:00:00Z")) && !nights.isActive(at: date("2026-12-21T11:00:00Z")))
    }
}
