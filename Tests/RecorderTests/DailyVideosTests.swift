import Capture
import CaptureTesting
import Foundation
@testable import Recorder
import Testing

/// Records a still a second from a synthetic camera named `camera` until there are `count`.
private func recordStills(root: String, camera: String, count: Int) async throws -> [String] {
    let timelapse = try TimelapseOutput(.init(storageRoot: root, intervalSeconds: 1))
    let session = CaptureSession()
    session.beginConfiguration()
    try session.addInput(SyntheticCamera.device().renamed(camera))
    try session.setFormat(.size(width: 160, height: 120, pixelFormat: .yuyv422))
    try session.setFrameRate(10)
    try session.addOutput(timelapse)
    try session.commitConfiguration()
    try session.startRunning()
    let shot = await waitUntil(seconds: 30) { RecordingInspector.files(under: root, endingWith: ".jpg").count >= count }
    #expect(shot, "fewer than \(count) stills were taken")
    await session.stop()
    return RecordingInspector.files(under: root, endingWith: ".jpg")
}

@Suite struct DailyVideosTests {
    private let berlin = TimeZone(identifier: "Europe/Berlin")!

    private func date(_ text: String) -> Date { ISO8601DateFormatter().date(from: text)! }

    @Test func runsAtTheLocalTimeEvenAcrossDaylightSavingChanges() {
        // Spring forward (2026-03-29, 02:00 → 03:00 CEST): 01:00 local is still 00:00Z.
        #expect(DailyVideos.nextRun(after: date("2026-03-28T12:00:00Z"), at: "01:00", timeZone: berlin) == date("2026-03-29T00:00:00Z"))
        #expect(DailyVideos.nextRun(after: date("2026-03-29T00:00:00Z"), at: "01:00", timeZone: berlin) == date("2026-03-29T23:00:00Z"))
        // 02:30 does not exist that night: the first instant after the gap.
        #expect(DailyVideos.nextRun(after: date("2026-03-28T12:00:00Z"), at: "02:30", timeZone: berlin) == date("2026-03-29T01:00:00Z"))
        // Fall back (2026-10-25, 03:00 → 02:00 CET): 02:30 happens twice, the video is built once.
        let first = DailyVideos.nextRun(after: date("2026-10-24T12:00:00Z"), at: "02:30", timeZone: berlin)
        #expect(first == date("2026-10-25T00:30:00Z"))
        #expect(DailyVideos.nextRun(after: first, at: "02:30", timeZone: berlin) == date("2026-10-26T01:30:00Z"))
    }

    @Test func theDayBeforeIsALocalDayOf23Or25Hours() {
        let spring = DailyVideos.day(before: date("2026-03-30T00:00:00Z"), timeZone: berlin)
        #expect(spring.label == "2026-03-29")
        #expect(spring.end.timeIntervalSince(spring.start) == 23 * 3600)
        let autumn = DailyVideos.day(before: date("2026-10-26T00:00:00Z"), timeZone: berlin)
        #expect(autumn.label == "2026-10-25")
        #expect(autumn.end.timeIntervalSince(autumn.start) == 25 * 3600)
        let sydney = DailyVideos.day(before: date("2026-07-01T00:00:00Z"), timeZone: TimeZone(identifier: "Australia/Sydney")!)
        #expect(sydney.label == "2026-06-30" && sydney.start == date("2026-06-29T14:00:00Z"))
    }

    @Test func theDailyVideoHoldsEveryStillOfTheDayInOrder() async throws {
        let dir = try TemporaryDirectory()
        defer { dir.remove() }
        let stills = try await recordStills(root: dir.path, camera: "porch", count: 4)
        #expect(stills.count >= 4)

        let now = Date()
        let day = DailyVideos.LocalDay(start: now.addingTimeInterval(-3600), end: now.addingTimeInterval(3600), label: "today")
        let job = DailyVideos.Job(camera: "porch", video: DailyVideo(framesPerSecond: 30, at: "01:00"))
        let entry = try #require(try DailyVideos.build(job, day: day, root: dir.path))
        #expect(entry.kind == .timelapse && entry.camera == "porch" && entry.frames == stills.count)
        let path = "\(dir.path)/\(entry.path)"
        #expect(path == "\(dir.path)/porch/timelapse/porch-today.mp4")
        #expect(RecordingInspector.ffprobeProblem(path) == nil)
        let decoded = try RecordingInspector.decode(path)
        #expect(decoded.codec == "h264")
        #expect(decoded.sequences.count == stills.count)
        let numbers = decoded.sequences.compactMap { $0 }
        #expect(numbers.count == stills.count && numbers == numbers.sorted(), "frames out of capture order: \(numbers)")
        // A day without stills gives no video.
        let empty = DailyVideos.LocalDay(start: now.addingTimeInterval(-90_000), end: now.addingTimeInterval(-86_400), label: "x")
        #expect(try DailyVideos.build(job, day: empty, root: dir.path) == nil)
    }

    @Test func aDailyVideoIsIndexedAndFoundAgainAtTheNextStart() async throws {
        let dir = try TemporaryDirectory()
        defer { dir.remove() }
        // Stills of a camera whose id holds dots, as USB path ids do.
        let camera = "pci-0000:00:14.0-usb-0:1:1.0"
        let stills = try await recordStills(root: dir.path, camera: camera, count: 2)
        let now = Date()
        let day = DailyVideos.LocalDay(start: now.addingTimeInterval(-3600), end: now.addingTimeInterval(3600), label: "2026-11-22")
        let built = try #require(try DailyVideos.build(DailyVideos.Job(camera: camera, video: DailyVideo(framesPerSecond: 30, at: "01:00")), day: day, root: dir.path))
        #expect(built.frames == stills.count)
        #expect(try RecordingInspector.decode("\(dir.path)/\(built.path)").sequences.count == stills.count)

        // An index lost (or from before daily videos were indexed) finds the video and the stills.
        let keeper = try StorageKeeper.open(root: dir.path, policy: RetentionPolicy(), events: RecorderEvents())
        #expect(keeper.recovery == RecoverySummary(known: 0, recovered: 0, adopted: stills.count + 1, quarantined: 0, missing: 0), "\(keeper.recovery)")
        let adopted = try #require(try keeper.index.entries(kind: .timelapse).first)
        #expect(adopted.path == built.path && adopted.frames == stills.count && adopted.state == .complete)
        keeper.add(built)
        await keeper.flush()
        let listing = try RecordingsListing(index: keeper.index, camera: nil, kind: .still, from: nil, to: nil)
        #expect(listing.entries.count == stills.count + 1)
        let again = try StorageKeeper.open(root: dir.path, policy: RetentionPolicy(), events: RecorderEvents())
        #expect(again.recovery == RecoverySummary(known: stills.count + 1, recovered: 0, adopted: 0, quarantined: 0, missing: 0))
    }
}

@Suite struct TimeArgumentTests {
    @Test func daysTimesAndZones() {
        let berlin = TimeZone(identifier: "Europe/Berlin")!
        let f = ISO8601DateFormatter()
        #expect(TimeArgument.parse("2026-11-22", end: false, timeZone: berlin) == f.date(from: "2026-11-21T23:00:00Z"))
        #expect(TimeArgument.parse("2026-11-22", end: true, timeZone: berlin)! > f.date(from: "2026-11-22T22:59:59Z")!)
        #expect(TimeArgument.parse("2026-11-22T10:00", end: false, timeZone: berlin) == f.date(from: "2026-11-22T09:00:00Z"))
        #expect(TimeArgument.parse("2026-11-22T10:00Z", end: false, timeZone: berlin) == f.date(from: "2026-11-22T10:00:00Z"))
        #expect(TimeArgument.parse("2026-11-22T10:00:30+05:30", end: false) == f.date(from: "2026-11-22T04:30:30Z"))
        let now = f.date(from: "2026-11-22T12:00:00Z")!
        #expect(TimeArgument.parse("yesterday", end: false, timeZone: berlin, now: now) == f.date(from: "2026-11-20T23:00:00Z"))
        for bad in ["2026-13-01", "2026-02-30", "22.11.2026", "2026-11-22T25:00", "soon"] {
            #expect(TimeArgument.parse(bad, end: false) == nil, "\(bad)")
        }
    }
}
