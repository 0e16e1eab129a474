import Capture
import CaptureTesting
import Foundation
import Media
@testable import Recorder
import Testing

/// A recording file of `bytes` bytes under `root`, and its index entry.
private func place(_ keeper: StorageKeeper, camera: String, kind: RecordingIndex.Kind, endNanos: Int64, bytes: Int, state: RecordingIndex.State = .complete) throws -> String {
    let stamp = StorageLayout.utcStamp(endNanos)
    let folder = kind == .segment ? "video" : "stills"
    let relative = "\(camera)/\(folder)/\(stamp.day)/\(camera)-\(stamp.stamp).\(kind == .segment ? "mp4" : "jpg")"
    try FileManager.default.createDirectory(atPath: "\(keeper.root)/\((relative as NSString).deletingLastPathComponent)", withIntermediateDirectories: true)
    try Data(count: bytes).write(to: URL(fileURLWithPath: "\(keeper.root)/\(relative)"))
    try keeper.index.put(RecordingIndex.Entry(
        kind: kind, camera: camera, path: relative, startNanos: endNanos - 1_000_000_000, endNanos: endNanos, frames: 10, bytes: Int64(bytes),
        codec: "h264", width: 160, height: 120, state: state))
    return relative
}

@Suite struct StorageTests {
    @Test func retentionByAgeAndBytesDeletesExactlyTheRightFiles() async throws {
        let dir = try TemporaryDirectory("vigil-retention")
        defer { dir.remove() }
        var policy = RetentionPolicy()
        policy.videos = RetentionLimits(maxAgeDays: 2)
        policy.stills = RetentionLimits(maxAgeDays: 10)
        policy.cameras["b"] = CameraRetention(videos: RetentionLimits(maxBytes: 250), stills: RetentionLimits(maxBytes: 150))
        let events = RecorderEvents()
        let log = RecorderLog(events)
        let keeper = try StorageKeeper.open(root: dir.path, policy: policy, events: events)
        let now: Int64 = 1_790_000_000 * 1_000_000_000
        // Camera a: by age only.
        let aOld = try place(keeper, camera: "a", kind: .segment, endNanos: now - 3 * day, bytes: 100)
        let aOldWriting = try place(keeper, camera: "a", kind: .segment, endNanos: now - 3 * day + 1_000_000_000, bytes: 100, state: .writing)
        let aEdge = try place(keeper, camera: "a", kind: .segment, endNanos: now - 2 * day + 1_000_000_000, bytes: 100)
        let aNew = try place(keeper, camera: "a", kind: .segment, endNanos: now - 1 * day, bytes: 100)
        let aStillOld = try place(keeper, camera: "a", kind: .still, endNanos: now - 11 * day, bytes: 10)
        let aStill = try place(keeper, camera: "a", kind: .still, endNanos: now - 9 * day, bytes: 10)
        // Camera b: by bytes (newest kept first), no age limit.
        let b1 = try place(keeper, camera: "b", kind: .segment, endNanos: now - 30 * day, bytes: 100)
        let b2 = try place(keeper, camera: "b", kind: .segment, endNanos: now - 3_000_000_000, bytes: 100)
        let b3 = try place(keeper, camera: "b", kind: .segment, endNanos: now - 2_000_000_000, bytes: 100)
        let b4 = try place(keeper, camera: "b", kind: .segment, endNanos: now - 1_000_000_000, bytes: 100)
        let bs1 = try place(keeper, camera: "b", kind: .still, endNanos: now - 3_000_000_000, bytes: 100)
        let bs2 = try place(keeper, camera: "b", kind: .still, endNanos: now - 2_000_000_000, bytes: 100)

        keeper.enforceRetention(nowWall: now)
        let deleted: Set = [aOld, aStillOld, b1, b2, bs1]
        let kept: Set = [aOldWriting, aEdge, aNew, aStill, b3, b4, bs2]
        for path in deleted { #expect(!FileManager.default.fileExists(atPath: "\(dir.path)/\(path)"), "\(path) should be deleted") }
        for path in kept { #expect(FileManager.default.fileExists(atPath: "\(dir.path)/\(path)"), "\(path) should be kept") }
        #expect(Set(try keeper.index.entries().map(\.path)) == kept)
        func reported() -> Set<String> {
            Set(log.all.compactMap { if case .recordingDeleted(_, let p, _) = $0 { return p } else { return nil } })
        }
        let expected = Set(deleted.map { "\(dir.path)/\($0)" })
        #expect(await waitUntil(seconds: 10) { reported().count >= expected.count })
        #expect(reported() == expected)
    }

    @Test func recoveryFinalizesAdoptsQuarantinesAndMarksMissing() async throws {
        let dir = try TemporaryDirectory("vigil-recovery")
        defer { dir.remove() }
        // A real recording to cut up.
        let source = try await recordSegment(root: dir.path, camera: "synthetic-0")
        let folder = (source as NSString).deletingLastPathComponent
        let full = try Data(contentsOf: URL(fileURLWithPath: source))
        try FileManager.default.removeItem(atPath: source)

        // Cut short by a crash, unknown to the index, garbage, and an index entry without a file.
        let cut = "\(folder)/synthetic-0-20261122T100000Z.mp4"
        try full.prefix(full.count * 3 / 4).write(to: URL(fileURLWithPath: cut + ".partial"))
        let unknown = "\(folder)/synthetic-0-20261122T100100Z.mp4"
        try full.write(to: URL(fileURLWithPath: unknown))
        let garbage = "\(folder)/synthetic-0-20261122T100200Z.mp4.partial"
        try Data((0..<5000).map { UInt8(truncatingIfNeeded: $0 * 7) }).write(to: URL(fileURLWithPath: garbage))
        let index = try RecordingIndex(root: dir.path)
        try index.put(RecordingIndex.Entry(kind: .segment, camera: "synthetic-0", path: "synthetic-0/video/2026-11-22/gone-20261122T090000Z.mp4",
                                           startNanos: 0, endNanos: 1, frames: 1, bytes: 1, codec: "h264", width: 1, height: 1, state: .complete))

        let keeper = try StorageKeeper.open(root: dir.path, policy: RetentionPolicy(), events: RecorderEvents())
        #expect(keeper.recovery == RecoverySummary(known: 0, recovered: 1, adopted: 1, quarantined: 1, missing: 1), "\(keeper.recovery)")
        let entries = Dictionary(try keeper.index.entries().map { ((($0.path) as NSString).lastPathComponent, $0) }, uniquingKeysWith: { a, _ in a })
        let recovered = try #require(entries["synthetic-0-20261122T100000Z.mp4"])
        #expect(recovered.state == .recovered && recovered.frames > 0 && recovered.codec == "h264")
        #expect(entries["synthetic-0-20261122T100100Z.mp4"]?.state == .complete)
        #expect(entries["gone-20261122T090000Z.mp4"]?.state == .missing)
        // The recovered file plays, and holds the frames the index says.
        let decoded = try RecordingInspector.decode(cut)
        #expect(RecordingInspector.ffprobeProblem(cut) == nil)
        #expect(decoded.sequences.count == recovered.frames)
        #expect(!FileManager.default.fileExists(atPath: garbage))
        #expect(RecordingInspector.files(under: dir.path + "/.quarantine", endingWith: ".partial").count == 1)
        // A second start finds everything in order.
        let again = try StorageKeeper.open(root: dir.path, policy: RetentionPolicy(), events: RecorderEvents())
        #expect(again.recovery == RecoverySummary(known: 2, recovered: 0, adopted: 0, quarantined: 0, missing: 0))
    }
}

/// Mounting a small tmpfs needs root (CI runs as root on these machines).
@Suite(.enabled(if: getuid() == 0, "needs root to mount a size-limited tmpfs"))
struct FullDiskSweepTests {
    @Test func aFillingDiskIsSweptAndRecordingGoesOn() async throws {
        let small = try SmallDisk("vigil-sweep")
        defer { small.remove() }
        var policy = RetentionPolicy()
        policy.minFreePercent = 0
        policy.minFreeBytes = 1 << 20
        let events = RecorderEvents()
        let log = RecorderLog(events)
        let keeper = try StorageKeeper.open(root: small.path, policy: policy, events: events)
        keeper.start()
        let source = SyntheticDeviceSource(count: 1)
        // The camera's own JPEGs, about 360 KB/s: the disk fills in seconds.
        let movie = try SegmentedMovieOutput(.init(storageRoot: small.path, segmentSeconds: 1, encoding: .streamCopy))
        let supervisor = Supervisor(
            plans: [CameraPlan(cameraID: "synthetic-0", format: .size(width: 640, height: 480, pixelFormat: .mjpeg), frameRate: 30,
                               outputs: [(movie, .init())])],
            source: source, events: events)
        let run = Task.detached { await supervisor.run() }
        // Far more than 4 MiB goes through the disk: the oldest segments must make room.
        #expect(await waitUntil(seconds: 60) { log.count("recording_deleted") >= 3 })
        let firstDeletion = log.all.firstIndex { $0.name == "recording_deleted" } ?? 0
        #expect(await waitUntil(seconds: 30) { log.all.dropFirst(firstDeletion).filter { $0.name == "segment_finalized" }.count >= 3 })
        run.cancel()
        await run.value
        await keeper.stop()

        let finalized = log.all.compactMap { if case .segmentFinalized(_, let info) = $0 { return info } else { return nil } }
        #expect(!FileManager.default.fileExists(atPath: finalized[0].path), "the oldest segment was kept")
        let surviving = RecordingInspector.files(under: small.path, endingWith: ".mkv")
        #expect(surviving.count >= 2)
        for file in surviving { #expect(RecordingInspector.ffprobeProblem(file) == nil, "\(file)") }
        // What is left is the newest stretch of recording, without a hole: the sweep kept ahead.
        let decoded = try surviving.map { try RecordingInspector.decode($0) }
        let numbers = decoded.flatMap(\.sequences).compactMap { $0 }
        #expect(zip(numbers, numbers.dropFirst()).allSatisfy { $1 == $0 + 1 }, "a gap in the surviving recording")
        #expect(log.all.filter { if case .error = $0 { return true } else { return false } }.isEmpty, "\(log.all.filter { $0.name == "error" })")
        #expect(Set(try keeper.index.entries(kind: .segment).map { "\(small.path)/\($0.path)" }) == Set(surviving))
        // `vigil verify` finds the index and the files in agreement, packets read and decoded.
        for deep in [false, true] {
            let verification = try IndexVerification(index: keeper.index, selection: .init(deep: deep))
            #expect(verification.problems.isEmpty, "\(verification.text())")
        }
    }
}
