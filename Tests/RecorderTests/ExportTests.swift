import Capture
import CaptureTesting
import Foundation
import Media
@testable import Recorder
import Synchronization
import Testing

@Suite(.timeLimit(.minutes(2))) struct ExportTests {
    /// Records at least four 1 s segments into an indexed root; returns the frames seen (sequence, wall time).
    private func record(into root: String) async throws -> (StorageKeeper, [(UInt32, Int64)]) {
        let events = RecorderEvents()
        let keeper = try StorageKeeper.open(root: root, policy: RetentionPolicy(), events: events)
        keeper.start()
        let seen = LockedList<(UInt32, Int64)>()
        let frames = FrameOutput(queueCapacity: 64, dropsLateFrames: false) { frame in
            if let n = PatternDecoder.sequence(inYUYV: frame.bytes, width: frame.width, height: frame.height) { seen.append((n, frame.wallNanos)) }
        }
        let movie = try SegmentedMovieOutput(.init(storageRoot: root, segmentSeconds: 1, dropsLateFrames: false))
        let supervisor = Supervisor(
            plans: [CameraPlan(cameraID: "synthetic-0", format: .size(width: 160, height: 120, pixelFormat: .yuyv422), frameRate: 15,
                               outputs: [(movie, .init()), (frames, .init())])],
            source: SyntheticDeviceSource(count: 1), events: events)
        let log = RecorderLog(events)
        let run = Task.detached { await supervisor.run() }
        // Four finished segments: the exports span the second to the fourth.
        #expect(await waitUntil(seconds: 30) { log.count("segment_finalized") >= 4 })
        run.cancel()
        await run.value
        // Read the index only once it holds every segment announced so far (events reach it
        // through a stream).
        #expect(await waitUntil(seconds: 10) { (try? keeper.index.entries(kind: .segment).count) == log.count("segment_finalized") })
        await keeper.stop()
        return (keeper, seen.all)
    }

    @Test(arguments: [false, true])
    func exportAcrossThreeSegmentsHasNoGapNoDuplicateAndRunningTimestamps(exact: Bool) async throws {
        let dir = try TemporaryDirectory("vigil-export")
        defer { dir.remove() }
        let (keeper, seen) = try await record(into: dir.path)
        let segments = try keeper.index.entries(kind: .segment)
        try #require(segments.count >= 4)
        // From the middle of the second segment to the middle of the fourth: three segments.
        let inSecond = seen.filter { $0.1 >= segments[1].startNanos && $0.1 <= segments[1].endNanos }
        let inFourth = seen.filter { $0.1 >= segments[3].startNanos && $0.1 <= segments[3].endNanos }
        let start = inSecond[inSecond.count / 2], end = inFourth[inFourth.count / 2]
        let from = start.1 - 30_000_000, to = end.1 + 30_000_000
        let out = dir.path + "/export.mp4"
        let summary = try SegmentJoiner.export(segments, root: dir.path, from: from, to: to, output: out, exact: exact) { _ in }
        #expect(summary.segments == 3 && summary.gaps.isEmpty)

        #expect(RecordingInspector.ffprobeProblem(out) == nil)
        let decoded = try RecordingInspector.decode(out)
        #expect(decoded.startsWithKeyframe)
        let numbers = decoded.sequences.compactMap { $0 }
        #expect(numbers.count == decoded.sequences.count && numbers.count == summary.frames)
        #expect(zip(numbers, numbers.dropFirst()).allSatisfy { $1 == $0 + 1 }, "a gap or a duplicate: \(numbers)")
        #expect(numbers.last == end.0)
        if exact {
            #expect(numbers.first == start.0)
        } else {
            // The copy starts at the keyframe before `from`: the second segment's first frame
            // (1 s segments, keyframes every 2 s).
            let firstOfSecond = try #require(seen.first { $0.1 >= segments[1].startNanos })
            #expect(numbers.first == firstOfSecond.0)
        }
        // Timestamps rise steadily across the joins: no step back, no jump.
        let reader = try MovieReader(path: out)
        var times: [Double] = []
        while let frame = try reader.nextFrame() { times.append(frame.seconds) }
        let steps = zip(times, times.dropFirst()).map { $1 - $0 }
        #expect(steps.allSatisfy { $0 > 0 && $0 < 0.2 }, "\(steps)")
    }

    /// A camera handed over between two nodes (`[cluster]`): the taker's file begins while the
    /// giver's runs, and the giver may begin one more short file meanwhile. The join takes each
    /// moment once (to a frame at the seam): the giver's file ends where the taker's begins, and
    /// a file within another is left out.
    @Test func filesOfTwoNodesThatOverlapAtAHandOverAreJoinedWithEveryFrameOnce() async throws {
        let dir = try TemporaryDirectory("vigil-export-handover")
        defer { dir.remove() }
        let (keeper, _) = try await record(into: dir.path)
        let segments = try keeper.index.entries(kind: .segment)
        try #require(segments.count >= 4)
        // After the first segment (the camera's start may leave a pause after it, which a join
        // closes up and so moves the frames' times), three back to back.
        let (first, second, third) = (segments[1], segments[2], segments[3])
        // Two nodes' files of one camera, by stream copy as both nodes write a network camera:
        // the giver's runs over the first and second segments, the taker's over the second and
        // third; and the giver's third, begun while it waited for the taker, lies within it.
        func file(_ parts: [RecordingIndex.Entry], _ name: String, node: String) throws -> (RecordingIndex.Entry, String) {
            let path = dir.path + "/" + name + ".mp4"
            let written = try SegmentJoiner.export(parts, root: dir.path, from: parts[0].startNanos, to: parts.last!.endNanos + 1_000_000_000, output: path, exact: false) { _ in }
            var entry = parts[0]
            entry.path = "@\(node)/\(name).mp4"
            entry.endNanos = parts.last!.endNanos
            entry.frames = written.frames
            return (entry, path)
        }
        let (giver, giverFile) = try file([first, second], "giver", node: "node-a")
        let (taker, takerFile) = try file([second, third], "taker", node: "node-b")
        let out = dir.path + "/clip.mp4"
        // To a second past the end: a joined file's frame times are its first frame's plus its
        // frame interval, a little off the capture times by its end.
        let summary = try SegmentJoiner.export(
            [giver, third, taker], root: dir.path, from: first.startNanos, to: third.endNanos + 1_000_000_000, output: out, exact: false,
            elsewhere: [giver.path: giverFile, taker.path: takerFile]) { _ in }
        let numbers = try RecordingInspector.decode(out).sequences.compactMap { $0 }
        var alone: [UInt32] = []
        for entry in [first, second, third] { alone += try RecordingInspector.decode(dir.path + "/" + entry.path).sequences.compactMap { $0 } }
        // Each node's file is itself a join here, whose frame times run on by its frame interval
        // and so drift from the capture times by a fraction of a frame: at the seam a frame may
        // be there twice or not at all. Without the cut, the whole second segment (15 frames)
        // would be there twice.
        let twice = numbers.count - Set(numbers).count, missing = Set(alone).subtracting(numbers)
        #expect(twice <= 1 && missing.count <= 1 && numbers == numbers.sorted(), "the join of both nodes' files: \(numbers) against \(alone)")
        #expect(summary.segments == 2 && summary.gaps.isEmpty, "\(summary)")
    }

    @Test func aContainerThatCannotHoldTheCodecIsRefusedWithAFix() throws {
        let entry = RecordingIndex.Entry(kind: .segment, camera: "c", path: "x.mp4", startNanos: 0, endNanos: 10, frames: 1, bytes: 1,
                                         codec: "h264", width: 2, height: 2, state: .complete)
        #expect(throws: RecorderError.self) {
            try SegmentJoiner.export([entry], root: "/nonexistent", from: 0, to: 10, output: "/tmp/out.mkv", exact: false) { _ in }
        }
        do {
            _ = try SegmentJoiner.export([entry], root: "/nonexistent", from: 0, to: 10, output: "/tmp/out.mkv", exact: false) { _ in }
        } catch {
            #expect("\(error)".contains("-o NAME.mp4"))
        }
    }

    /// A segment whose timestamps run past what an instant can hold (a damaged file, or one
    /// put in the camera's folder by hand) is an export error naming it, not a trap that would
    /// stop the recorder (the web server joins clips in its process).
    @Test func aSegmentWithTimestampsOutOfRangeIsAnErrorNamingIt() throws {
        let dir = try TemporaryDirectory()
        defer { dir.remove() }
        let made = RecordingInspector.run("/usr/bin/ffmpeg", [
            "-v", "error", "-f", "lavfi", "-i", "testsrc=size=64x48:rate=10", "-t", "1", "-c:v", "mjpeg",
            "-output_ts_offset", "1000000000000", dir.path + "/far.mkv",
        ])
        try #require(made.status == 0, "\(made.errorOutput)")
        let entry = RecordingIndex.Entry(kind: .segment, camera: "c", path: "far.mkv", startNanos: 1_795_000_000_000_000_000,
                                         endNanos: 1_795_000_001_000_000_000, frames: 10, bytes: 1, codec: "mjpeg", width: 64, height: 48, state: .complete)
        for exact in [false, true] {
            do {
                _ = try SegmentJoiner.export([entry], root: dir.path, from: 0, to: .max, output: dir.path + "/out.mkv", exact: exact) { _ in }
                Issue.record("exported a file whose times do not fit")
            } catch {
                #expect("\(error)".contains("far.mkv holds timestamps out of range"), "\(error)")
            }
        }
        #expect(!FileManager.default.fileExists(atPath: dir.path + "/out.mkv"))
    }
}
