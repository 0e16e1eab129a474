import Capture
import CaptureTesting
import Foundation
import Media
import Plumbing
@testable import Recorder
import Synchronization
import Testing

/// The index says what reached the disk, checked with `IndexVerification` (what `vigil verify`
/// runs): packets read, then every frame decoded.
private func disagreements(_ index: RecordingIndex) throws -> [String] {
    try [false, true].flatMap { deep in
        try IndexVerification(index: index, selection: .init(deep: deep)).problems.map { "\(deep ? "deep " : "")\($0.path): \($0.problem.rawValue): \($0.detail)" }
    }
}

/// One synthetic camera recording with no free-space floor onto a small tmpfs, indexed by a
/// storage keeper: H.264 in fragmented MP4 (nearly lossless when `heavy`, to fill the disk in
/// seconds), or the camera's own MJPEG copied into Matroska (640x480 when `heavy`, else 160x120).
private struct FullDiskRecording {
    let small: SmallDisk
    let keeper: StorageKeeper
    let log: RecorderLog
    let movie: SegmentedMovieOutput
    let supervisor: Supervisor

    init(_ name: String, size: String, mjpeg: Bool, heavy: Bool = true) throws {
        small = try SmallDisk(name, size: size)
        var policy = RetentionPolicy()
        policy.minFreePercent = 0
        policy.minFreeBytes = 0
        let events = RecorderEvents()
        log = RecorderLog(events)
        keeper = try StorageKeeper.open(root: small.path, policy: policy, events: events)
        keeper.start()
        let encoder = heavy ? EncoderSettings(preset: "ultrafast", rateControl: .crf(0)) : EncoderSettings()
        movie = try SegmentedMovieOutput(.init(storageRoot: small.path, segmentSeconds: 2, encoding: mjpeg ? .streamCopy : .h264(encoder)))
        let (width, height) = heavy ? (mjpeg ? (640, 480) : (320, 240)) : (160, 120)
        let format: FormatRequest = .size(width: width, height: height, pixelFormat: mjpeg ? .mjpeg : .yuyv422)
        supervisor = Supervisor(
            plans: [CameraPlan(cameraID: "synthetic-0", format: format, frameRate: heavy ? 30 : 10, outputs: [(movie, .init())])],
            source: SyntheticDeviceSource(count: 1), events: events)
    }

    var finalized: [SegmentInfo] { log.all.compactMap { if case .segmentFinalized(_, let info) = $0 { info } else { nil } } }

    /// Stops the camera, indexes all it said, and checks the index against the files: nothing
    /// left as being written, no difference `vigil verify` would list, every file decoded with
    /// the frames the index gives it, one file per second at most. Returns the entries.
    @discardableResult
    func stopAndCheck(_ run: Task<Void, Never>) async throws -> [RecordingIndex.Entry] {
        run.cancel()
        await run.value
        #expect(await log.settle())
        await keeper.stop()
        let entries = try keeper.index.entries(kind: .segment)
        #expect(!entries.isEmpty)
        #expect(!entries.contains { $0.state == .writing }, "a segment left as being written: \(entries.filter { $0.state == .writing })")
        let problems = try disagreements(keeper.index)
        #expect(problems.isEmpty, "\(problems.joined(separator: "\n"))")
        for entry in entries {
            let decoded = try RecordingInspector.decode(StorageLayout(root: small.path).absolute(entry.path))
            #expect(decoded.sequences.count == entry.frames, "\(entry.path)")
            #expect(!decoded.sequences.contains(nil), "\(entry.path): a frame without its number")
        }
        // A resume after the full disk opens one segment, not a 1-frame file and then `_02`.
        let names = entries.map { ($0.path as NSString).lastPathComponent }
        let seconds = Dictionary(grouping: names) { RecordingFileName($0)?.wallNanos ?? 0 }
        #expect(seconds.values.allSatisfy { $0.count == 1 }, "several files in one second: \(seconds.values.filter { $0.count > 1 })")
        return entries
    }
}

/// Fills the file system holding `path` with a file there, as another program would.
private func fillDisk(_ path: String, appending: Bool = false) throws {
    let fd = open(path, O_WRONLY | O_CREAT | (appending ? O_APPEND : O_TRUNC), 0o644)
    guard fd >= 0 else { throw POSIXError(.EIO) }
    defer { close(fd) }
    let chunk = [UInt8](repeating: 1, count: 4096)
    while chunk.withUnsafeBytes({ write(fd, $0.baseAddress, $0.count) }) > 0 {}
}

/// A small tmpfs filled with no free-space floor: segments run into ENOSPC, the emergency sweep
/// makes a little room, recording resumes and fills it again. On 256 KiB the index (file, log
/// and shared memory) is about half the disk: its row for a finished segment once lost the
/// room the sweep freed to the next segment's writes, the segment stayed `writing`, nothing was
/// left to delete and recording stopped for good.
@Suite(.enabled(if: getuid() == 0, "needs root to mount a size-limited tmpfs"), .timeLimit(.minutes(2)))
struct IndexOnDiskTests {
    @Test(arguments: [false, true])
    func segmentsCutShortByAFullDiskAreIndexedAsTheyAreOnDisk(mjpeg: Bool) async throws {
        // (640x480 MJPEG fills 256 KiB before a cluster of it is kept: 2 MiB leaves some.)
        let recording = try FullDiskRecording("vigil-cut-short", size: mjpeg ? "2m" : "256k", mjpeg: mjpeg)
        defer { recording.small.remove() }
        let run = Task.detached { await recording.supervisor.run() }
        let interrupted = { recording.finalized.filter(\.isIncomplete) }
        #expect(await waitUntil(seconds: 60) { interrupted().count >= 3 }, "\(recording.log.all.map(\.description))")
        let entries = try await recording.stopAndCheck(run)
        #expect(entries.contains { $0.state == .interrupted })
    }

    /// A disk full of what Vigil may not delete (another program's file): the output pauses
    /// instead of writing a header at every retry, and once the file is deleted from outside
    /// recording resumes by itself, into files that decode and that the index lists as they are.
    /// (H.264 at 160x120: light enough that the files recorded once room came back are still
    /// there to decode. The camera's MJPEG fills 256 KiB within a segment.)
    @Test func recordingResumesByItselfWhenRoomComesBack() async throws {
        let recording = try FullDiskRecording("vigil-room-back", size: "256k", mjpeg: false, heavy: false)
        defer { recording.small.remove() }
        await recording.keeper.flush()
        #expect(FileManager.default.fileExists(atPath: StorageLayout(root: recording.small.path).indexReservePath), "the index has its reserve")
        let filler = recording.small.path + "/another-program.bin"
        try fillDisk(filler)
        let run = Task.detached { await recording.supervisor.run() }
        let room = StorageRoom.of(root: recording.small.path)
        let saidFull = { recording.log.all.contains { if case .error("storage", let message, _) = $0 { message.contains("no finished recording is left") } else { false } } }
        #expect(await waitUntil(seconds: 30) { saidFull() && recording.movie.failedWriteCount > 0 && room.isHeld }, "\(recording.log.all.map(\.description))")
        // The other program takes what the index gave back too (its log, emptied by the sweep).
        await recording.keeper.flush()
        try fillDisk(filler, appending: true)
        #expect(await waitUntil(seconds: 10) { room.isHeld })
        await recording.keeper.flush()
        // Retries came once a second: three seconds would have made three more.
        let failures = recording.movie.failedWriteCount
        try await Task.sleep(for: .seconds(3))
        #expect(recording.movie.failedWriteCount == failures, "a paused output writes nothing to the full disk")
        #expect(room.isHeld)
        #expect(recording.finalized.allSatisfy { $0.frameCount == 0 }, "nothing fitted beside the other program's file")

        try FileManager.default.removeItem(atPath: filler)
        #expect(await waitUntil(seconds: 30) { recording.finalized.filter { $0.frameCount > 0 }.count >= 2 }, "\(recording.log.all.map(\.description))")
        let entries = try await recording.stopAndCheck(run)
        #expect(entries.contains { $0.frames > 0 })
    }

    /// With no free-space floor, the disk is above it between two full-disk sweeps: that must not
    /// restart the clock of the "nothing left to delete" line, which came once a second.
    @Test func theLineSayingNothingIsLeftToDeleteComesEvery30Seconds() async throws {
        let small = try SmallDisk("vigil-said", size: "256k")
        defer { small.remove() }
        var policy = RetentionPolicy()
        policy.minFreePercent = 0
        policy.minFreeBytes = 0
        let events = RecorderEvents()
        let said = Mutex(0)
        _ = events.subscribe { if case .error("storage", let message, _) = $0, message.contains("no finished recording") { said.withLock { $0 += 1 } } }
        let keeper = try StorageKeeper.open(root: small.path, policy: policy, events: events)
        try fillDisk(small.path + "/another-program.bin")
        let second: Int64 = 1_000_000_000
        await keeper.io.run {
            for at in 0..<30 {
                keeper.checkFreeSpace(Int64(at) * second, emergency: true)
                keeper.checkFreeSpace(Int64(at) * second + second / 2)
            }
        }
        #expect(said.withLock { $0 } == 1)
        await keeper.io.run { keeper.checkFreeSpace(30 * second, emergency: true) }
        #expect(said.withLock { $0 } == 2)
    }

    /// A deletion the index could not record (another process holds it locked) is recorded as
    /// soon as it can be, not left listed as complete until the next start.
    @Test func aDeletionTheIndexCouldNotRecordIsRetried() async throws {
        let dir = try TemporaryDirectory("vigil-retry-delete")
        defer { dir.remove() }
        var policy = RetentionPolicy()
        policy.videos.maxAgeDays = 1
        policy.minFreePercent = 0
        policy.minFreeBytes = 0
        let events = RecorderEvents()
        let keeper = try StorageKeeper.open(root: dir.path, policy: policy, events: events)
        let now = SystemClocks.wallNanos()
        // Ages count from the newest recording: one of now, and one three days older.
        func place(_ end: Int64) throws -> String {
            let stamp = StorageLayout.utcStamp(end)
            let relative = "c/video/\(stamp.day)/c-\(stamp.stamp).mp4"
            try FileManager.default.createDirectory(atPath: "\(dir.path)/c/video/\(stamp.day)", withIntermediateDirectories: true)
            try Data(count: 1000).write(to: URL(fileURLWithPath: "\(dir.path)/\(relative)"))
            try keeper.index.put(RecordingIndex.Entry(
                kind: .segment, camera: "c", path: relative, startNanos: end - 1, endNanos: end,
                frames: 1, bytes: 1000, codec: "h264", width: 16, height: 16, state: .complete))
            return relative
        }
        let relative = try place(now - 3 * 86_400_000_000_000)
        let recent = try place(now)
        // Another connection holds the write lock longer than the index waits (5 s busy timeout).
        let locker = Process()
        locker.executableURL = URL(fileURLWithPath: "/usr/bin/sqlite3")
        locker.arguments = [StorageLayout(root: dir.path).indexPath]
        let input = Pipe()
        locker.standardInput = input
        try locker.run()
        input.fileHandleForWriting.write(Data("BEGIN IMMEDIATE;\n".utf8))
        try await Task.sleep(nanoseconds: 300_000_000)
        await keeper.io.run { keeper.enforceRetention(nowWall: now) }
        #expect(!FileManager.default.fileExists(atPath: "\(dir.path)/\(relative)"), "the old file is deleted")
        input.fileHandleForWriting.write(Data("COMMIT;\n".utf8))
        try input.fileHandleForWriting.close()
        locker.waitUntilExit()
        #expect(try keeper.index.entries().map(\.path) == [relative, recent], "the index was locked: the entry is still there")
        // The next tick records it.
        await keeper.io.run { keeper.tick() }
        #expect(try keeper.index.entries().map(\.path) == [recent])
    }
}
