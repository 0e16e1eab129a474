import Foundation
import Recorder
import Testing

@Suite struct TimeArgumentRoundTripTests {
    private let utc = ISO8601DateFormatter()
    private func instant(_ text: String) -> Date { utc.date(from: text)! }
    private let berlin = TimeZone(identifier: "Europe/Berlin")!

    @Test func printsLocalTimeWithItsOffset() {
        let t = instant("2026-11-22T20:51:41Z").addingTimeInterval(0.75)
        #expect(TimeArgument.format(t, timeZone: berlin) == "2026-11-22T21:51:41+01:00")
        #expect(TimeArgument.format(t, timeZone: berlin, roundingUp: true) == "2026-11-22T21:51:42+01:00")
        #expect(TimeArgument.format(t, timeZone: TimeZone(identifier: "UTC")!) == "2026-11-22T20:51:41Z")
        #expect(TimeArgument.format(t, timeZone: TimeZone(identifier: "America/St_Johns")!) == "2026-11-22T17:21:41-03:30")
        #expect(TimeArgument.format(instant("2026-07-01T12:00:00Z"), timeZone: berlin) == "2026-07-01T14:00:00+02:00")
    }

    /// Whatever zone printed it and whatever zone reads it, a printed time means the same second.
    @Test func whatIsPrintedIsReadBackAsTheSameSecondInAnyZone() {
        let zones = ["Europe/Berlin", "America/New_York", "Asia/Kolkata", "Pacific/Chatham", "UTC", "Australia/Lord_Howe"].map { TimeZone(identifier: $0)! }
        var generator = SeededGenerator(seed: 0x7153)
        for _ in 0..<500 {
            // Instants from 2000 to 2040, including DST changes.
            let t = Date(timeIntervalSince1970: Double.random(in: 946_684_800...2_208_988_800, using: &generator))
            let printer = zones.randomElement(using: &generator)!, reader = zones.randomElement(using: &generator)!
            let text = TimeArgument.format(t, timeZone: printer)
            #expect(TimeArgument.parse(text, end: false, timeZone: reader) == Date(timeIntervalSince1970: t.timeIntervalSince1970.rounded(.down)), "\(text)")
        }
    }

    @Test(arguments: [
        ("2026-11-22T21:51:41+01:00", "2026-11-22T20:51:41Z"),
        ("2026-11-22t21:51:41+0100", "2026-11-22T20:51:41Z"),
        ("2026-11-22T21:51:41-01", "2026-11-22T22:51:41Z"),
        ("2026-11-22T20:51:41Z", "2026-11-22T20:51:41Z"),
        ("2026-11-22T20:51:41z", "2026-11-22T20:51:41Z"),
        ("2026-11-22 21:51:41+01:00", "2026-11-22T20:51:41Z"),
        ("2026-11-22 21:51:41", "2026-11-22T20:51:41Z"),
        ("2026-11-22T21:51", "2026-11-22T20:51:00Z"),
        ("2026-11-22T9:05", "2026-11-22T08:05:00Z"),
    ])
    func acceptsRFC3339AndLocalTimes(_ text: String, _ meant: String) {
        #expect(TimeArgument.parse(text, end: false, timeZone: berlin) == instant(meant))
    }

    @Test func acceptsTheFractionsThatJSONPrints() {
        #expect(TimeArgument.parse("2026-11-22T20:51:41.250Z", end: false) == instant("2026-11-22T20:51:41Z").addingTimeInterval(0.25))
    }

    @Test(arguments: ["2026-11-22T24:00", "2026-11-22T10:60", "2026-11-22T10:00:60", "2026-02-30", "2026-11-22T10",
                      "2026-11-22T10:00+24:00", "2026-11-22T10:00+01:60", "2026-11-22T10:00:00+99999999999999999",
                      "2026-11-22T10:00:00.1234567890Z", "٢٠٢٦-11-22", "2026-11-22T10:00 +01:00 ", "26-11-22", "2026-11-22T"])
    func rejectsWhatIsNotATime(_ text: String) {
        #expect(TimeArgument.parse(text, end: false) == nil)
    }
}
