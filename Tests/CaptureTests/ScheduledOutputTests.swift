import Capture
import CaptureTesting
import Foundation
import Plumbing
import Testing

/// Active in alternating windows of `windowNanos`, starting inactive at multiples of twice that.
struct AlternatingSchedule: OutputSchedule {
    let windowNanos: Int64
    func isActive(_ wall: Int64) -> Bool { (wall / windowNanos) % 2 == 1 }
    func state(atWallNanos wall: Int64) -> (isActive: Bool, untilWallNanos: Int64) {
        (isActive(wall), (wall / windowNanos + 1) * windowNanos)
    }
}

@Suite(.timeLimit(.minutes(2))) struct ScheduledOutputTests {
    @Test func movieRecordsOnlyInsideItsScheduleAndEndsSegmentsAtItsEdges() async throws {
        let dir = try TemporaryDirectory()
        defer { dir.remove() }
        let schedule = AlternatingSchedule(windowNanos: 1_500_000_000)
        // Segments far longer than a window: every cut below comes from the schedule.
        let movie = try SegmentedMovieOutput(.init(storageRoot: dir.path, segmentSeconds: 3600, dropsLateFrames: false, schedule: schedule))
        let frames = FrameLog(dropsLateFrames: false, queueCapacity: 256)
        let (session, log) = try startSession(
            format: .size(width: 160, height: 120, pixelFormat: .yuyv422), fps: 10,
            outputs: [(movie, .init()), (frames.output, .init())])
        #expect(await waitUntil(seconds: 30) { log.segments.count >= 2 })
        await stopAndDrain(session, log)
        let segments = log.segments
        #expect(segments.count >= 2)
        let inside = frames.all.filter { schedule.isActive($0.wallNanos) }
        var recorded: [UInt32] = []
        for segment in segments {
            // Each segment lies within one window.
            #expect(schedule.isActive(segment.firstFrameWallNanos) && schedule.isActive(segment.lastFrameWallNanos))
            #expect(segment.firstFrameWallNanos / 1_500_000_000 == segment.lastFrameWallNanos / 1_500_000_000)
            #expect(RecordingInspector.ffprobeProblem(segment.path) == nil)
            recorded += try RecordingInspector.decode(segment.path).sequences.compactMap { $0 }
        }
        // Exactly the frames captured inside the windows, none outside, none lost.
        #expect(recorded == inside.map { UInt32($0.sequence) })
        #expect(!frames.all.filter { !schedule.isActive($0.wallNanos) }.isEmpty, "the camera never left a window")
    }

    @Test func timelapseShootsOnlyInsideItsScheduleAndCountsNoSkips() async throws {
        let dir = try TemporaryDirectory()
        defer { dir.remove() }
        let schedule = AlternatingSchedule(windowNanos: 2_000_000_000)
        let timelapse = try TimelapseOutput(.init(storageRoot: dir.path, intervalSeconds: 1, schedule: schedule))
        let (session, log) = try startSession(
            format: .size(width: 160, height: 120, pixelFormat: .yuyv422), fps: 10, outputs: [(timelapse, .init())])
        let start = SystemClocks.wallNanos()
        #expect(await waitUntil(seconds: 30) { log.stills.count >= 4 })
        await stopAndDrain(session, log)
        let end = SystemClocks.wallNanos()
        let stills = log.stills
        #expect(stills.allSatisfy { schedule.isActive($0.shotWallNanos) }, "a still outside the schedule")
        // Every active instant after the first second was shot; inactive ones are not "skipped".
        let expected = stride(from: (start / 1_000_000_000 + 2) * 1_000_000_000, to: end - 1_000_000_000, by: 1_000_000_000)
            .filter { schedule.isActive($0) }
        #expect(Set(expected).isSubset(of: Set(stills.map(\.shotWallNanos))))
        #expect(timelapse.skippedShotCount == 0)
    }
}
