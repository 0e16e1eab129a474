import Capture
import CaptureTesting
import Foundation
import Media
@testable import Recorder
import SystemPackage
import Testing

let second: Int64 = 1_000_000_000
let day: Int64 = 86_400 * second

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
func place(
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

func exists(_ root: String, _ relative: String) -> Bool { FileManager.default.fileExists(atPath: "\(root)/\(relative)") }

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
