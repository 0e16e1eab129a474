import Capture
import CaptureTesting
import Foundation
import Media
@testable import Recorder
import SystemPackage
import Testing

@Suite struct ClockJumpRetentionTests {
    /// 2020-01-01: where a board without a battery-backed clock may think it is.
    private let past: Int64 = 1_577_836_800 * second

    private func keeper(_ dir: TemporaryDirectory, maxAgeDays: Double = 2) throws -> StorageKeeper {
        var policy = RetentionPolicy()
        policy.videos = RetentionLimits(maxAgeDays: maxAgeDays)
        return try StorageKeeper.open(root: dir.path, policy: policy, events: RecorderEvents())
    }

    @Test func agesAreJudgedAgainstTheNewestRecordingNotAClockThatJumped() throws {
        let dir = try TemporaryDirectory("vigil-clock")
        defer { dir.remove() }
        let keeper = try keeper(dir)
        let files = try [past - day, past - day / 2, past].map { try place(keeper, camera: "a", endNanos: $0) }
        let old = try place(keeper, camera: "a", endNanos: past - 3 * day)
        // The clock now says 200 days later; nothing was recorded since.
        keeper.enforceRetention(nowWall: past + 200 * day)
        for file in files { #expect(exists(dir.path, file), "\(file) deleted on the strength of a clock jump") }
        #expect(!exists(dir.path, old), "three days older than the newest recording is old")
    }

    @Test func recordingsMadeBeforeAnObservedJumpAreNotTakenForOld() throws {
        let dir = try TemporaryDirectory("vigil-clock-observed")
        defer { dir.remove() }
        let keeper = try keeper(dir)
        // Booted 10 minutes ago, with the clock at 2020; NTP then sets it 180 days on.
        let boot: Int64 = 0, jump = 180 * day
        keeper.noteClock(wall: past, sinceBoot: boot + 600 * second)
        let before = try [past - 300 * second, past - 100 * second].map { try place(keeper, camera: "a", endNanos: $0) }
        let earlierBoot = try place(keeper, camera: "a", endNanos: past - 5 * day)
        keeper.noteClock(wall: past + 2 * second + jump, sinceBoot: boot + 602 * second)
        let after = try place(keeper, camera: "a", endNanos: past + jump + 10 * second)
        keeper.enforceRetention(nowWall: past + jump + 20 * second)
        for file in before + [after] { #expect(exists(dir.path, file), "\(file)") }
        let shifted = try keeper.index.entries().filter { before.contains($0.path) }.map(\.endNanos)
        #expect(shifted == [past - 300 * second + jump, past - 100 * second + jump])
        // Made before this boot, so not stamped by the wrong clock of this one: really old.
        #expect(!exists(dir.path, earlierBoot))
    }

    @Test func aSuspendIsNoClockStep() throws {
        let dir = try TemporaryDirectory("vigil-clock-suspend")
        defer { dir.remove() }
        let keeper = try keeper(dir)
        let file = try place(keeper, camera: "a", endNanos: past - 100 * second)
        keeper.noteClock(wall: past, sinceBoot: 600 * second)
        // Eight hours asleep: the wall clock and the time since boot move on together.
        keeper.noteClock(wall: past + 8 * 3600 * second, sinceBoot: 600 * second + 8 * 3600 * second)
        #expect(try keeper.index.entries().map(\.endNanos) == [past - 100 * second])
        #expect(exists(dir.path, file))
    }

    @Test func massDeletionAfterAnUnseenJumpIsRefusedUntilARestart() throws {
        let dir = try TemporaryDirectory("vigil-clock-mass")
        defer { dir.remove() }
        let now = past + 200 * day
        let keeper = try keeper(dir)
        let old = try (0..<10).map { try place(keeper, camera: "a", endNanos: past - Int64($0) * 3600 * second) }
        // First pass: the newest recording is 200 days behind the clock.
        keeper.enforceRetention(nowWall: now)
        // Recording goes on at the new time; every earlier file now looks 200 days old.
        let new = try place(keeper, camera: "a", endNanos: now + 30 * second)
        keeper.enforceRetention(nowWall: now + 60 * second)
        for file in old + [new] { #expect(exists(dir.path, file), "\(file)") }
        // A restart with the clock right: the first pass finds recent recordings and deletes the old ones.
        let restarted = try self.keeper(dir)
        restarted.enforceRetention(nowWall: now + 90 * second)
        for file in old { #expect(!exists(dir.path, file), "\(file)") }
        #expect(exists(dir.path, new))
    }

    @Test func loweringTheAgeLimitStillDeletesMostRecordings() throws {
        let dir = try TemporaryDirectory("vigil-clock-normal")
        defer { dir.remove() }
        let now = past
        let keeper = try keeper(dir, maxAgeDays: 1)
        let old = try (2..<10).map { try place(keeper, camera: "a", endNanos: now - Int64($0) * day) }
        let recent = try place(keeper, camera: "a", endNanos: now - 60 * second)
        keeper.enforceRetention(nowWall: now)
        for file in old { #expect(!exists(dir.path, file), "\(file)") }
        #expect(exists(dir.path, recent))
    }
}

@Suite struct QuarantineTests {
    @Test func quarantinedFilesAreIndexedListedAndDeletedFirst() throws {
        let dir = try TemporaryDirectory("vigil-quarantine")
        defer { dir.remove() }
        let now: Int64 = 1_795_330_620 * second
        // A leftover that does not play, and one quarantined by an older Vigil (flat name).
        let folder = "porch/video/\(StorageLayout.utcStamp(now).day)"
        try FileManager.default.createDirectory(atPath: "\(dir.path)/\(folder)", withIntermediateDirectories: true)
        try Data(count: 300).write(to: URL(fileURLWithPath: "\(dir.path)/\(folder)/porch-20261122T065000Z.mp4.partial"))
        try FileManager.default.createDirectory(atPath: "\(dir.path)/.quarantine", withIntermediateDirectories: true)
        try Data(count: 200).write(to: URL(fileURLWithPath: "\(dir.path)/.quarantine/porch_video_2026-11-21_porch-20261121T120000Z.mp4.partial"))

        // The index knew the leftover as being written when the crash came.
        let startedAt = now - 10 * 60 * second + 123_456_789
        try RecordingIndex(root: dir.path).put(RecordingIndex.Entry(
            kind: .segment, camera: "porch", path: "\(folder)/porch-20261122T065000Z.mp4", startNanos: startedAt, endNanos: startedAt,
            frames: 0, bytes: 0, codec: "", width: 0, height: 0, state: .writing))
        // Someone else's file is not Vigil's to move or delete.
        try Data(count: 5).write(to: URL(fileURLWithPath: "\(dir.path)/\(folder)/june.mp4"))
        var policy = RetentionPolicy()
        policy.videos = RetentionLimits(maxBytes: 550)
        let keeper = try StorageKeeper.open(root: dir.path, policy: policy, events: RecorderEvents())
        #expect(keeper.recovery.quarantined == 1 && keeper.recovery.missing == 0, "in the quarantine, not missing")
        let quarantined = try keeper.index.entries(states: [.quarantined])
        #expect(quarantined.map(\.path) == [".quarantine/porch_video_2026-11-21_porch-20261121T120000Z.mp4.partial",
                                            ".quarantine/\(folder)/porch-20261122T065000Z.mp4.partial"])
        #expect(quarantined.allSatisfy { $0.camera == "porch" && $0.kind == .segment })
        #expect(quarantined.map(\.bytes) == [200, 300], "a leftover is quarantined whole")
        #expect(quarantined.last?.startNanos == startedAt)
        let listing = try RecordingsListing(index: keeper.index, camera: "porch", kind: .segment, from: nil, to: nil)
        #expect(listing.text().contains("quarantined"))

        // Two good segments, older than the leftovers: over 550 bytes, the oldest leftover goes first.
        let a = try place(keeper, camera: "porch", endNanos: now - 3 * day)
        let b = try place(keeper, camera: "porch", endNanos: now - 2 * day)
        keeper.enforceRetention(nowWall: now)
        #expect(exists(dir.path, a) && exists(dir.path, b))
        #expect(try keeper.index.entries(states: [.quarantined]).map(\.path) == [".quarantine/\(folder)/porch-20261122T065000Z.mp4.partial"])
        #expect(!exists(dir.path, ".quarantine/porch_video_2026-11-21_porch-20261121T120000Z.mp4.partial"))
        // A second start knows the rest; a quarantined file a person removed leaves the index.
        try FileManager.default.removeItem(atPath: "\(dir.path)/.quarantine/\(folder)/porch-20261122T065000Z.mp4.partial")
        let again = try StorageKeeper.open(root: dir.path, policy: policy, events: RecorderEvents())
        #expect(again.recovery == RecoverySummary(known: 2, recovered: 0, adopted: 0, quarantined: 0, missing: 0))
        #expect(try again.index.entries(states: [.quarantined]).isEmpty)
        #expect(exists(dir.path, "\(folder)/june.mp4"))
    }
}

extension QuarantineTests {
    @Test func aQuarantinedSegmentIsNeverExported() {
        let leftover = RecordingIndex.Entry(
            kind: .segment, camera: "c", path: ".quarantine/c/video/2026-11-22/c-20261122T065700Z.mp4.partial", startNanos: 0, endNanos: 10,
            frames: 0, bytes: 300, codec: "h264", width: 2, height: 2, state: .quarantined)
        #expect {
            try SegmentJoiner.export([leftover], root: "/nonexistent", from: 0, to: 10, output: "/nonexistent/out.mp4", exact: false) { _ in }
        } throws: { "\($0)".contains("no finished recording") }
    }
}
