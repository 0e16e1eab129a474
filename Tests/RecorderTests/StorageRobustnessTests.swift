import Capture
import CaptureTesting
import Foundation
import Media
@testable import Recorder
import SystemPackage
import Testing

private let second: Int64 = 1_000_000_000
private let day: Int64 = 86_400 * second

/// Records about two seconds from a synthetic camera named `camera` into `root`; returns the segment.
func recordSegment(root: String, camera: String) async throws -> String {
    let movie = try SegmentedMovieOutput(.init(storageRoot: root, segmentSeconds: 3600, dropsLateFrames: false))
    let session = CaptureSession()
    session.beginConfiguration()
    try session.addInput(SyntheticCamera.device().renamed(camera))
    try session.setFormat(.size(width: 160, height: 120, pixelFormat: .yuyv422))
    try session.setFrameRate(15)
    try session.addOutput(movie)
    try session.commitConfiguration()
    try session.startRunning()
    // Several fragments (one every half second).
    try await Task.sleep(nanoseconds: 2_600_000_000)
    await session.stop()
    // An hour of the wall clock may have begun meanwhile (segments are cut there): the larger
    // file is kept, so that the root holds one real segment of several fragments, as callers expect.
    let size = { (path: String) in (try? FileManager.default.attributesOfItem(atPath: path)[.size] as? Int) ?? 0 }
    let files = RecordingInspector.files(under: root, endingWith: ".mp4")
    let kept = try #require(files.max { size($0) < size($1) })
    for file in files where file != kept { try FileManager.default.removeItem(atPath: file) }
    return kept
}

/// A file of `bytes` bytes at `relative` under the keeper's root, and its index entry.
@discardableResult
private func place(
    _ keeper: StorageKeeper, camera: String, kind: RecordingIndex.Kind = .segment, endNanos: Int64, bytes: Int = 100,
    state: RecordingIndex.State = .complete, folder: String? = nil
) throws -> String {
    let stamp = StorageLayout.utcStamp(endNanos)
    let relative = "\(folder ?? camera)/\(kind.folder)/\(stamp.day)/\(camera)-\(stamp.stamp).\(kind == .segment ? "mp4" : "jpg")"
    try FileManager.default.createDirectory(atPath: "\(keeper.root)/\((relative as NSString).deletingLastPathComponent)", withIntermediateDirectories: true)
    try Data(count: bytes).write(to: URL(fileURLWithPath: "\(keeper.root)/\(relative)"))
    try keeper.index.put(RecordingIndex.Entry(
        kind: kind, camera: camera, path: relative, startNanos: endNanos - second, endNanos: endNanos, frames: 10, bytes: Int64(bytes),
        codec: "h264", width: 160, height: 120, state: state))
    return relative
}

private func exists(_ root: String, _ relative: String) -> Bool { FileManager.default.fileExists(atPath: "\(root)/\(relative)") }

@Suite struct RecordingFileNameTests {
    private let stamp: Int64 = 1_795_330_620 * second  // 2026-11-22T06:57:00Z

    @Test func namesAreReadFromTheEndSoCameraIdsMayHoldDots() throws {
        let dotted = StorageLayout.cameraFolder("pci-0000:00:14.0-usb-0:1:1.0")
        #expect(dotted == "pci-0000-00-14.0-usb-0-1-1.0")
        for name in ["\(dotted)-20261122T065700Z.mp4", "\(dotted)-20261122T065700Z.jpg", "\(dotted)-20261122T065700Z.mp4.partial"] {
            #expect(StorageLayout.wallNanos(fromFileName: name) == stamp, "\(name)")
            let parsed = try #require(RecordingFileName(name))
            #expect(parsed.camera == dotted && parsed.sequence == 1 && !parsed.isDaily)
        }
        let second = try #require(RecordingFileName("\(dotted)-20261122T065700Z_02.mp4.partial"))
        #expect(second.camera == dotted && second.wallNanos == stamp && second.sequence == 2 && second.isPartial && second.fileExtension == "mp4")
        let daily = try #require(RecordingFileName("\(dotted)-2026-11-22.mp4"))
        #expect(daily.isDaily && daily.camera == dotted && daily.wallNanos == 1_795_305_600 * 1_000_000_000)
        #expect(RecordingFileName("CAM-20261122T065700Z.mp4")?.camera == "CAM")
    }

    @Test func namesVigilDidNotWriteAreRefused() {
        for name in ["CAM-20261122T065700Z", "-20261122T065700Z.mp4", "CAM-20261322T065700Z.mp4", "CAM-20260230T065700Z.mp4",
                     "CAM-20261122T065700.mp4", "CAM20261122T065700Z.mp4", "notes.txt", "CAM-2026-13-01.mp4", "CAM-20261122T065700Z_1.mp4", "CAM-20261122T065700Z_+5.mp4"] {
            #expect(RecordingFileName(name) == nil, "\(name)")
        }
    }

    @Test func stillsOfADottedCameraAreFoundForTheTimelapse() throws {
        let dir = try TemporaryDirectory("vigil-dotted-stills")
        defer { dir.remove() }
        let camera = "pci-0000:00:14.0-usb-0:1:1.0"
        let layout = StorageLayout(root: dir.path)
        for offset in [0, 60, 120] {
            let path = try layout.snapshot(camera: camera, at: stamp + Int64(offset) * second)
                .replacingOccurrences(of: "/snapshots/", with: "/stills/")
            try FileManager.default.createDirectory(atPath: (path as NSString).deletingLastPathComponent, withIntermediateDirectories: true)
            try Data([0xFF, 0xD8]).write(to: URL(fileURLWithPath: path))
        }
        let found = try TimelapseBuilder.stills(
            root: dir.path, camera: camera, from: 1_795_330_600 * second, to: 1_795_330_800 * second)
        #expect(found.count == 3)
    }
}

@Suite struct DottedCameraRecoveryTests {
    @Test func aCutShortSegmentOfACameraWithDotsIsRecoveredNotQuarantined() async throws {
        let dir = try TemporaryDirectory("vigil-dotted")
        defer { dir.remove() }
        let camera = "pci-0000:00:14.0-usb-0:1:1.0"
        let source = try await recordSegment(root: dir.path, camera: camera)
        let full = try Data(contentsOf: URL(fileURLWithPath: source))
        try FileManager.default.removeItem(atPath: source)
        let folder = (source as NSString).deletingLastPathComponent
        let cut = "\(folder)/pci-0000-00-14.0-usb-0-1-1.0-20261122T100000Z.mp4"
        try full.prefix(full.count * 3 / 4).write(to: URL(fileURLWithPath: cut + StorageLayout.partialSuffix))
        let whole = "\(folder)/pci-0000-00-14.0-usb-0-1-1.0-20261122T100100Z_02.mp4"
        try full.write(to: URL(fileURLWithPath: whole))

        let keeper = try StorageKeeper.open(root: dir.path, policy: RetentionPolicy(), events: RecorderEvents())
        #expect(keeper.recovery == RecoverySummary(known: 0, recovered: 1, adopted: 1, quarantined: 0, missing: 0), "\(keeper.recovery)")
        let entries = try keeper.index.entries()
        #expect(entries.map(\.state) == [.recovered, .complete])
        #expect(entries.first?.startNanos == 1_795_341_600 * second)
        #expect(RecordingInspector.ffprobeProblem(cut) == nil)
        #expect(try RecordingInspector.decode(cut).sequences.count == entries.first?.frames)
    }
}

@Suite struct IndexRebuildTests {
    /// A root with one real segment, one still and one snapshot on disk.
    private func root() async throws -> (TemporaryDirectory, Set<String>) {
        let dir = try TemporaryDirectory("vigil-index-rebuild")
        let segment = try await recordSegment(root: dir.path, camera: "porch")
        let layout = StorageLayout(root: dir.path)
        let still = try layout.snapshot(camera: "porch", at: 1_795_330_620 * second).replacingOccurrences(of: "/snapshots/", with: "/stills/")
        try FileManager.default.createDirectory(atPath: (still as NSString).deletingLastPathComponent, withIntermediateDirectories: true)
        try Data(count: 500).write(to: URL(fileURLWithPath: still))
        let snapshot = try layout.snapshot(camera: "porch", at: 1_795_330_680 * second)
        try Data(count: 700).write(to: URL(fileURLWithPath: snapshot))
        return (dir, Set([segment, still, snapshot].map { String($0.dropFirst(dir.path.count + 1)) }))
    }

    /// Opens a keeper despite the bad index: it knows every file, and indexes what is recorded next.
    private func openAndRecord(_ root: String, files: Set<String>) async throws -> StorageKeeper {
        let events = RecorderEvents()
        let keeper = try StorageKeeper.open(root: root, policy: RetentionPolicy(), events: events)
        #expect(Set(try keeper.index.entries().map(\.path)) == files)
        #expect(keeper.recovery.adopted == files.count)
        #expect(try keeper.index.entries(kind: .snapshot).count == 1)
        keeper.start()
        events.emit(.segmentStarted(camera: "porch", path: "\(root)/porch/video/2026-11-23/porch-20261123T000000Z.mp4", startWallNanos: 1))
        await keeper.stop()
        #expect(try keeper.index.entries(states: [.writing]).map(\.path) == ["porch/video/2026-11-23/porch-20261123T000000Z.mp4"])
        return keeper
    }

    @Test func aGarbageIndexIsMovedAsideAndRebuiltFromTheFiles() async throws {
        let (dir, files) = try await root()
        defer { dir.remove() }
        let indexPath = "\(dir.path)/\(StorageLayout.indexFileName)"
        try Data((0..<8192).map { UInt8(truncatingIfNeeded: $0 &* 31 &+ 7) }).write(to: URL(fileURLWithPath: indexPath))
        let keeper = try await openAndRecord(dir.path, files: files)
        #expect(keeper.index.path == indexPath, "rebuilt in place, not in memory")
        let aside = try FileManager.default.contentsOfDirectory(atPath: dir.path).filter { $0.hasPrefix("\(StorageLayout.indexFileName).corrupt-") }
        #expect(aside.count == 1, "the damaged index is kept for a person to look at")
        // The rebuilt file is a good index of the current schema.
        let again = try RecordingIndex(root: dir.path)
        #expect(Set(try again.entries().map(\.path)).isSuperset(of: files))
    }

    @Test func aTruncatedIndexIsMovedAsideAndRebuiltFromTheFiles() async throws {
        let (dir, files) = try await root()
        defer { dir.remove() }
        let indexPath = "\(dir.path)/\(StorageLayout.indexFileName)"
        do {
            // A real index with many entries, checkpointed into the main file, then cut in half.
            let index = try RecordingIndex(root: dir.path)
            try index.transaction {
                for n in 0..<3000 {
                    try index.put(RecordingIndex.Entry(
                        kind: .segment, camera: "gone", path: "gone/video/2026-01-01/gone-\(n).mp4", startNanos: Int64(n), endNanos: Int64(n),
                        frames: 1, bytes: 1, codec: String(repeating: "x", count: 100), width: 1, height: 1, state: .missing))
                }
            }
        }
        let size = try #require(try FileManager.default.attributesOfItem(atPath: indexPath)[.size] as? Int)
        #expect(size > 100_000)
        let handle = try FileHandle(forWritingTo: URL(fileURLWithPath: indexPath))
        try handle.truncate(atOffset: UInt64(size / 2))
        try handle.close()
        let keeper = try await openAndRecord(dir.path, files: files)
        #expect(keeper.index.path == indexPath)
    }

    @Test func anIndexThatCannotBeOpenedIsReplacedByOneInMemory() async throws {
        let (dir, files) = try await root()
        defer { dir.remove() }
        // A directory where the file should be: it can be neither opened nor moved aside as a file
        // (root ignores permissions, so this is how the tests make it unusable).
        let indexPath = "\(dir.path)/\(StorageLayout.indexFileName)"
        try FileManager.default.createDirectory(atPath: indexPath, withIntermediateDirectories: false)
        let keeper = try await openAndRecord(dir.path, files: files)
        #expect(keeper.index.path == nil)
        var isDirectory: ObjCBool = false
        #expect(FileManager.default.fileExists(atPath: indexPath, isDirectory: &isDirectory) && isDirectory.boolValue, "left alone")
    }

    @Test func anIndexFromANewerVigilIsLeftAloneAndRecordingGoesOn() async throws {
        let (dir, files) = try await root()
        defer { dir.remove() }
        do {
            let index = try RecordingIndex(root: dir.path)
            try index.put(RecordingIndex.Entry(kind: .segment, camera: "x", path: "x/video/d/x.mp4", startNanos: 0, endNanos: 0, frames: 0,
                                               bytes: 0, codec: "", width: 0, height: 0, state: .complete))
        }
        try setUserVersion(dir.path, 99)
        #expect(throws: RecorderError.self) { try RecordingIndex(root: dir.path) }
        let keeper = try await openAndRecord(dir.path, files: files)
        #expect(keeper.index.path == nil)
        try setUserVersion(dir.path, 1)
        #expect(try RecordingIndex(root: dir.path).entries().map(\.path) == ["x/video/d/x.mp4"], "the newer file was not touched")
    }

    @Test func anIndexFromBeforeVersioningIsMigratedAndNewOnesAreVersioned() throws {
        let dir = try TemporaryDirectory("vigil-index-version")
        defer { dir.remove() }
        _ = try RecordingIndex(root: dir.path)
        #expect(try userVersion(dir.path) == RecordingIndex.schemaVersion)
        try setUserVersion(dir.path, 0)
        _ = try RecordingIndex(root: dir.path)
        #expect(try userVersion(dir.path) == RecordingIndex.schemaVersion)
    }

    /// `PRAGMA user_version` is the big-endian 32-bit number at byte 60 of a SQLite file's header.
    private func setUserVersion(_ root: String, _ version: Int32) throws {
        let handle = try FileHandle(forUpdating: URL(fileURLWithPath: "\(root)/\(StorageLayout.indexFileName)"))
        defer { try? handle.close() }
        try handle.seek(toOffset: 60)
        try handle.write(contentsOf: withUnsafeBytes(of: UInt32(bitPattern: version).bigEndian) { Data($0) })
    }

    private func userVersion(_ root: String) throws -> Int32 {
        let header = try Data(contentsOf: URL(fileURLWithPath: "\(root)/\(StorageLayout.indexFileName)")).prefix(64)
        return Int32(bitPattern: header.suffix(4).reduce(UInt32(0)) { $0 << 8 | UInt32($1) })
    }
}

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

@Suite struct KeeperEventTests {
    @Test func everyEventEmittedBeforeStopIsIndexed() async throws {
        let dir = try TemporaryDirectory("vigil-keeper-events")
        defer { dir.remove() }
        let events = RecorderEvents()
        let keeper = try StorageKeeper.open(root: dir.path, policy: RetentionPolicy(), events: events)
        keeper.start()
        for n in 0..<2000 {
            let path = "\(dir.path)/c/video/2026-11-22/c-\(n).mp4"
            events.emit(.segmentStarted(camera: "c", path: path, startWallNanos: Int64(n)))
            events.emit(.segmentFinalized(camera: "c", SegmentInfo(
                path: path, frameCount: 1, byteCount: 1, firstFrameWallNanos: Int64(n), lastFrameWallNanos: Int64(n), codec: "h264",
                width: 1, height: 1, isIncomplete: false)))
        }
        await keeper.stop()
        #expect(try keeper.index.entries(kind: .segment, states: [.complete]).count == 2000)
    }

    @Test func aSnapshotIsIndexedAsOneAndFoundAgainAtTheNextStart() async throws {
        let dir = try TemporaryDirectory("vigil-keeper-snapshot")
        defer { dir.remove() }
        let events = RecorderEvents()
        let keeper = try StorageKeeper.open(root: dir.path, policy: RetentionPolicy(), events: events)
        keeper.start()
        let path = try StorageLayout(root: dir.path).snapshot(camera: "c", at: 1_795_330_620 * second)
        try Data(count: 1234).write(to: URL(fileURLWithPath: path))
        events.emit(.stillSaved(camera: "c", path: path, shotWallNanos: nil))
        await keeper.stop()
        let entry = try #require(try keeper.index.entries().first)
        #expect(entry.kind == .snapshot && entry.startNanos == 1_795_330_620 * second && entry.bytes == 1234)
        let again = try StorageKeeper.open(root: dir.path, policy: RetentionPolicy(), events: events)
        #expect(again.recovery == RecoverySummary(known: 1, recovered: 0, adopted: 0, quarantined: 0, missing: 0))
    }
}

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
