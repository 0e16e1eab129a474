import Capture
import CaptureTesting
import Foundation
import Media
import Plumbing
@testable import Recorder
import SystemPackage
import Testing

@Suite(.enabled(if: getuid() == 0, "needs root to mount a size-limited tmpfs"))
struct DiskFullErrnoTests {
    /// A keeper with no free-space floor: only a report of a full disk can start a sweep.
    private func keeperWithoutFloor(_ disk: SmallDisk) throws -> (StorageKeeper, RecorderEvents) {
        var policy = RetentionPolicy()
        policy.minFreePercent = 0
        policy.minFreeBytes = 0
        let events = RecorderEvents()
        return (try StorageKeeper.open(root: disk.path, policy: policy, events: events), events)
    }

    @Test func aWriteFailingWithENOSPCMakesRoomWhateverItsMessageSays() async throws {
        let small = try SmallDisk("vigil-enospc")
        defer { small.remove() }
        // No floor at all: only the ENOSPC report can start the sweep.
        let (keeper, events) = try keeperWithoutFloor(small)
        let free = try #require(FreeSpaceFloor.space(small.path)).free
        let old = try place(keeper, camera: "c", endNanos: 1_795_330_620 * second, bytes: Int(free) - 16_384)
        keeper.start()
        events.emit(.error(camera: "c", message: "recording failed (write: some other wording)", errno: .noSpace))
        await keeper.stop()
        #expect(!exists(small.path, old), "the oldest recording makes room")
    }

    @Test func onADiskFilledByRecordingsRoomIsMadeAndTheIndexFileOpens() throws {
        let small = try SmallDisk("vigil-full-of-recordings")
        defer { small.remove() }
        // No index file (it was lost), and two stills fill every block: the older one is most of the disk.
        let layout = StorageLayout(root: small.path)
        let now: Int64 = 1_795_330_620 * second
        let old = try layout.snapshot(camera: "porch", at: now - day).replacingOccurrences(of: "/snapshots/", with: "/stills/")
        let new = try layout.snapshot(camera: "porch", at: now).replacingOccurrences(of: "/snapshots/", with: "/stills/")
        for still in [old, new] {
            try FileManager.default.createDirectory(atPath: (still as NSString).deletingLastPathComponent, withIntermediateDirectories: true)
        }
        let free = try #require(FreeSpaceFloor.space(small.path)).free
        try Data(count: Int(free) - 65_536).write(to: URL(fileURLWithPath: old))
        try Data(count: Int(try #require(FreeSpaceFloor.space(small.path)).free)).write(to: URL(fileURLWithPath: new))
        #expect(try #require(FreeSpaceFloor.space(small.path)).free == 0)
        let keeper = try StorageKeeper.open(root: small.path, policy: RetentionPolicy(), events: RecorderEvents())
        #expect(keeper.index.path == StorageLayout(root: small.path).indexPath, "the index file, not one in memory")
        #expect(!FileManager.default.fileExists(atPath: old), "the oldest recording made room")
        #expect(try keeper.index.entries().map(\.path) == [String(new.dropFirst(small.path.count + 1))])
    }

    @Test func anIndexWriteOnAFullDiskMakesRoomAndIsNotLost() async throws {
        let small = try SmallDisk("vigil-index-write-full")
        defer { small.remove() }
        // No floor: only the index's own full-disk report can start the sweep.
        let (keeper, events) = try keeperWithoutFloor(small)
        let now: Int64 = 1_795_330_620 * second
        let old = try place(keeper, camera: "c", endNanos: now - day, bytes: 1_000_000)
        // Someone else's file takes every block left: the next index write finds the disk full.
        let free = try #require(FreeSpaceFloor.space(small.path)).free
        try Data(count: Int(free)).write(to: URL(fileURLWithPath: "\(small.path)/filler"))
        keeper.start()
        let segment = "\(small.path)/c/video/\(StorageLayout.utcStamp(now).day)/c-\(StorageLayout.utcStamp(now).stamp).mp4"
        events.emit(.segmentStarted(camera: "c", path: segment, startWallNanos: now))
        await keeper.stop()
        #expect(!exists(small.path, old), "the oldest recording made room for the index")
        #expect(try keeper.index.entries().map(\.state) == [.writing], "the new segment is indexed")
    }

    @Test func aDiskFullOfOtherFilesLeavesRecordingWithAnIndexInMemory() throws {
        let small = try SmallDisk("vigil-full-index")
        defer { small.remove() }
        let still = try StorageLayout(root: small.path).snapshot(camera: "porch", at: 1_795_330_620 * second)
            .replacingOccurrences(of: "/snapshots/", with: "/stills/")
        try FileManager.default.createDirectory(atPath: (still as NSString).deletingLastPathComponent, withIntermediateDirectories: true)
        try Data(count: 500).write(to: URL(fileURLWithPath: still))
        // Fill every last block.
        let free = try #require(FreeSpaceFloor.space(small.path)).free
        try? Data(count: Int(free)).write(to: URL(fileURLWithPath: "\(small.path)/filler"))
        try? Data(count: 4096).write(to: URL(fileURLWithPath: "\(small.path)/filler2"))
        let keeper = try StorageKeeper.open(root: small.path, policy: RetentionPolicy(), events: RecorderEvents())
        #expect(keeper.index.path == nil)
        // The one recording was deleted trying to make room, as the free-space sweep does; still
        // no room for the index file, so one in memory serves.
        #expect(!FileManager.default.fileExists(atPath: still))
        #expect(try keeper.index.entries().isEmpty)
    }

    @Test func theFreeSpaceSweepDeletesQuarantinedLeftoversFirst() throws {
        let small = try SmallDisk("vigil-sweep-quarantine")
        defer { small.remove() }
        // A leftover from a crash (newer than the good segment), quarantined at start.
        let now: Int64 = 1_795_330_620 * second
        let folder = "porch/video/\(StorageLayout.utcStamp(now).day)"
        try FileManager.default.createDirectory(atPath: "\(small.path)/\(folder)", withIntermediateDirectories: true)
        try Data(count: 1_200_000).write(to: URL(fileURLWithPath: "\(small.path)/\(folder)/porch-20261122T065000Z.mp4.partial"))
        var policy = RetentionPolicy()
        policy.minFreePercent = 0
        policy.minFreeBytes = 1 << 20
        let keeper = try StorageKeeper.open(root: small.path, policy: policy, events: RecorderEvents())
        #expect(keeper.recovery.quarantined == 1)
        let segment = try place(keeper, camera: "porch", endNanos: now - day, bytes: 1_000_000)
        // Someone else's file fills the disk to below the floor.
        let free = try #require(FreeSpaceFloor.space(small.path)).free
        try Data(count: Int(free) - 512 * 1024).write(to: URL(fileURLWithPath: "\(small.path)/filler"))
        keeper.checkFreeSpace(SystemClocks.monotonicNanos())
        #expect(try keeper.index.entries(states: [.quarantined]).isEmpty)
        #expect(RecordingInspector.files(under: "\(small.path)/.quarantine", endingWith: ".partial").isEmpty)
        #expect(exists(small.path, segment), "the leftover was enough to make room")
    }
}

/// A full disk is recognised by its cause (SQLITE_FULL, ENOSPC), never by a message's text.
@Suite(.enabled(if: getuid() == 0, "needs root to mount a size-limited tmpfs"))
struct IndexDiskFullTests {
    @Test func anIndexWriteOnAFullDiskIsRecognisedAsFull() throws {
        let small = try SmallDisk("vigil-sqlite-full")
        defer { small.remove() }
        let index = try RecordingIndex(root: small.path)
        // Leave a few blocks, then write rows until SQLite cannot grow its WAL.
        let free = try #require(FreeSpaceFloor.space(small.path)).free
        try Data(count: Int(free) - 8192).write(to: URL(fileURLWithPath: "\(small.path)/filler"))
        let error = #expect(throws: RecorderError.self) {
            for n in 0..<100_000 {
                try index.put(RecordingIndex.Entry(
                    kind: .segment, camera: "c", path: "c/video/2026-11-22/c-\(n)-\(String(repeating: "x", count: 200)).mp4",
                    startNanos: Int64(n), endNanos: Int64(n), frames: 1, bytes: 1, codec: "h264", width: 1, height: 1, state: .complete))
            }
        }
        #expect(error?.isDiskFull == true, "\(String(describing: error))")
        #expect(error?.isDamagedIndex == false)
    }
}

@Suite struct RecorderErrorTests {
    /// SQLite's own code for a full disk is enough, with or without the system's errno.
    @Test func sqliteFullIsADiskFullWhateverTheText() {
        #expect(RecorderError.index(code: 13 /* SQLITE_FULL */, errno: nil, message: "x", isNewer: false).isDiskFull)
        #expect(RecorderError.index(code: 10 /* SQLITE_IOERR */, errno: .diskQuotaExceeded, message: "x", isNewer: false).isDiskFull)
        #expect(!RecorderError.index(code: 10, errno: .ioError, message: "disk is full", isNewer: false).isDiskFull)
        #expect(!RecorderError.export("the disk is full").isDiskFull)
    }
}

@Suite struct IndexJournalTests {
    /// SQLite's defaults let the write-ahead log grow to 4 MiB and keep it: on a small card that
    /// is minutes of recordings, and space no sweep gives back.
    @Test func theIndexJournalStaysSmallHoweverManyWrites() throws {
        let dir = try TemporaryDirectory("vigil-journal")
        defer { dir.remove() }
        let index = try RecordingIndex(root: dir.path)
        var largest: Int64 = 0
        for i in 0..<3000 {
            let end = Int64(1_795_330_620 + i * 10) * second
            try index.put(RecordingIndex.Entry(
                kind: .segment, camera: "c", path: "c/video/2026-11-22/c-\(i).mp4", startNanos: end - 10 * second, endNanos: end,
                frames: 150, bytes: 100_000, codec: "h264", width: 160, height: 120, state: .complete))
            if i % 50 == 0 {
                let size = (try? FileManager.default.attributesOfItem(atPath: StorageLayout(root: dir.path).indexWALPath)[.size] as? Int64) ?? 0
                largest = max(largest, size)
            }
        }
        #expect(largest > 0, "the index is in WAL mode")
        #expect(largest <= 512 * 1024, "the journal grew to \(largest) bytes")
        #expect(try index.entries().count == 3000)
    }
}
