import Capture
import CaptureTesting
import Foundation
@testable import Recorder
import Testing

/// Motion events in the index: ended where they began after a crash, deleted with their
/// pictures when older than the camera's videos may be.
@Suite struct MotionIndexTests {
    private let day: Int64 = 86_400_000_000_000

    @Test func anEventACrashLeftUnderWayEndsWhereItBeganWhenTheIndexOpens() throws {
        let dir = try TemporaryDirectory("vigil-motion-index")
        defer { dir.remove() }
        let index = try RecordingIndex(root: dir.path)
        try index.startMotionEvent(camera: "porch", startNanos: 1_000)
        try index.endMotionEvent(camera: "porch", startNanos: 5_000, endNanos: 9_000, peakPercent: 3, picture: nil)
        #expect(try index.motionEvents().map(\.endNanos) == [nil, 9_000])
        let keeper = try StorageKeeper.open(root: dir.path, policy: RetentionPolicy(), events: RecorderEvents())
        #expect(try keeper.index.motionEvents().map(\.endNanos) == [1_000, 9_000])
    }

    /// A running event's row shows its size and picture; an update that comes after its end
    /// (never expected, but rows are written in turn) leaves what the end wrote.
    @Test func anEventUnderWayIsListedWithItsPeakAndPictureSoFar() throws {
        let dir = try TemporaryDirectory("vigil-motion-update")
        defer { dir.remove() }
        let index = try RecordingIndex(root: dir.path)
        try index.startMotionEvent(camera: "porch", startNanos: 1_000)
        try index.updateMotionEvent(camera: "porch", startNanos: 1_000, peakPercent: 2.5, picture: "porch/events/a.jpg")
        try index.updateMotionEvent(camera: "porch", startNanos: 1_000, peakPercent: 4, picture: nil)
        let running = try #require(try index.motionEvents().first)
        #expect(running.endNanos == nil && running.peakPercent == 4 && running.picture == "porch/events/a.jpg")
        try index.endMotionEvent(camera: "porch", startNanos: 1_000, endNanos: 9_000, peakPercent: 5, picture: "porch/events/a.jpg")
        try index.updateMotionEvent(camera: "porch", startNanos: 1_000, peakPercent: 1, picture: "porch/events/b.jpg")
        let ended = try #require(try index.motionEvents().first)
        #expect(ended.endNanos == 9_000 && ended.peakPercent == 5 && ended.picture == "porch/events/a.jpg")
    }

    @Test func retentionDeletesEventsOlderThanTheVideosWithTheirPictures() throws {
        let dir = try TemporaryDirectory("vigil-motion-retention")
        defer { dir.remove() }
        var policy = RetentionPolicy()
        policy.videos = RetentionLimits(maxAgeDays: 2)
        let keeper = try StorageKeeper.open(root: dir.path, policy: policy, events: RecorderEvents())
        let now: Int64 = 1_790_000_000 * 1_000_000_000
        // The camera has a recording (retention goes through the cameras the index lists; ages
        // count from the newest recording, a day old here).
        try keeper.index.put(RecordingIndex.Entry(
            kind: .segment, camera: "porch", path: "porch/video/recent.mp4", startNanos: now - day, endNanos: now - day, frames: 1,
            bytes: 1, codec: "h264", width: 1, height: 1, state: .complete))
        var pictures: [String] = []
        for (n, end) in [now - 4 * day, now - day].enumerated() {
            let picture = "porch/events/\(n).jpg"
            try FileManager.default.createDirectory(atPath: dir.path + "/porch/events", withIntermediateDirectories: true)
            FileManager.default.createFile(atPath: dir.path + "/" + picture, contents: Data([0xFF, 0xD8, 0xFF, 0xD9]))
            try keeper.index.endMotionEvent(camera: "porch", startNanos: end - 1_000, endNanos: end, peakPercent: 1, picture: picture)
            pictures.append(picture)
        }
        keeper.enforceRetention(nowWall: now)
        #expect(try keeper.index.motionEvents(camera: "porch").map(\.picture) == [pictures[1]])
        #expect(!FileManager.default.fileExists(atPath: dir.path + "/" + pictures[0]))
        #expect(FileManager.default.fileExists(atPath: dir.path + "/" + pictures[1]))
    }
}
