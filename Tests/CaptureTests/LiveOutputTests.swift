import Capture
import CaptureTesting
import Foundation
import Media
import Plumbing
import Testing

/// Live view: snapshots from memory, one shared MJPEG stream, fMP4 from the recording's own
/// encoder, and viewers that never slow capture.
@Suite(.timeLimit(.minutes(2))) struct LiveOutputTests {
    /// Decodes a JPEG (or an fMP4 byte stream) written to a temporary file.
    private func decode(_ data: Data, in dir: TemporaryDirectory, name: String) throws -> DecodedRecording {
        let path = "\(dir.path)/\(name)"
        try data.write(to: URL(fileURLWithPath: path))
        #expect(RecordingInspector.ffprobeProblem(path) == nil)
        return try RecordingInspector.decode(path)
    }

    /// A raw 30 fps camera whose recording encodes H.264, the live view sharing its packets.
    private func startEncodedCamera(recordingInto dir: TemporaryDirectory) async throws -> (LiveOutput, SegmentedMovieOutput, CaptureSession, EventLog) {
        let live = LiveOutput()
        let movie = try SegmentedMovieOutput(.init(storageRoot: dir.path, segmentSeconds: 60, encoding: .h264(EncoderSettings(preset: "ultrafast"))))
        movie.shareEncodedPackets(with: live.mp4)
        let (session, log) = try startSession(
            format: .size(width: 320, height: 240, pixelFormat: .yuyv422), fps: 30, outputs: [(movie, .init()), (live, .init())])
        #expect(await waitUntil(seconds: 10) { live.mp4.isH264 == true })
        return (live, movie, session, log)
    }

    @Test func snapshotIsTheCurrentFrameAndChanges() async throws {
        let dir = try TemporaryDirectory()
        defer { dir.remove() }
        let live = LiveOutput()
        let (session, log) = try startSession(
            format: .size(width: 320, height: 240, pixelFormat: .yuyv422), fps: 15, outputs: [(live, .init())])
        #expect(await waitUntil(seconds: 10) { session.capturedFrameCount >= 3 })
        let first = try await live.snapshot()
        let capturedAfterFirst = session.capturedFrameCount
        #expect(await waitUntil(seconds: 10) { session.capturedFrameCount >= capturedAfterFirst + 5 })
        // Counted as the snapshot is asked for: counted after it, the count would also hold the
        // frames captured while a busy machine got round to resuming the test.
        let capturedBeforeSecond = session.capturedFrameCount
        let second = try await live.snapshot()
        await stopAndDrain(session, log)

        let a = try decode(first.data, in: dir, name: "a.jpg")
        let b = try decode(second.data, in: dir, name: "b.jpg")
        #expect(a.width == 320 && a.height == 240)
        let seqA = try #require(a.sequences.first ?? nil)
        let seqB = try #require(b.sequences.first ?? nil)
        #expect(UInt64(seqA) == first.sequence && UInt64(seqB) == second.sequence)
        // The image changes, and is the newest frame (sequences count from 0; a frame or two may
        // still be on their way to the output when the snapshot is asked for).
        #expect(seqB > seqA)
        #expect(Int(seqB) + 3 >= capturedBeforeSecond - 1, "snapshot \(seqB) is old: \(capturedBeforeSecond) frames were captured before it was asked for")
        // Once the camera stopped there is no live frame.
        await #expect(throws: CaptureError.self) { try await live.snapshot() }
    }

    @Test func mjpegCameraSnapshotIsItsOwnJPEG() async throws {
        let dir = try TemporaryDirectory()
        defer { dir.remove() }
        let live = LiveOutput()
        let frames = FrameLog(keepBytes: true, dropsLateFrames: false)
        let (session, log) = try startSession(
            format: .size(width: 320, height: 240, pixelFormat: .mjpeg), fps: 15, outputs: [(live, .init()), (frames.output, .init())])
        #expect(await waitUntil(seconds: 10) { frames.all.count >= 3 })
        let shot = try await live.snapshot()
        await stopAndDrain(session, log)
        let cameraFrame = try #require(frames.all.first { $0.sequence == shot.sequence }?.bytes)
        let expected = try cameraFrame.withUnsafeBytes { raw in try JPEGRepair().jpeg(from: raw) { Data($0) } }
        #expect(shot.data == expected, "not the camera's own JPEG")
        #expect(try decode(shot.data, in: dir, name: "m.jpg").sequences == [UInt32(shot.sequence)])
    }

    @Test func mjpegViewersShareAdvancingFrames() async throws {
        let dir = try TemporaryDirectory()
        defer { dir.remove() }
        let live = LiveOutput()
        let (session, log) = try startSession(
            format: .size(width: 320, height: 240, pixelFormat: .yuyv422), fps: 30, outputs: [(live, .init())])
        let one = try #require(live.mjpegViewer())
        let two = try #require(live.mjpegViewer())
        #expect(live.viewerCount == 2)
        var sequences: [UInt32] = []
        for i in 0..<6 {
            guard case .data(let jpeg) = await one.next() else { Issue.record("viewer ended"); break }
            sequences.append(try #require(try decode(jpeg, in: dir, name: "f\(i).jpg").sequences.first ?? nil))
        }
        guard case .data = await two.next() else { Issue.record("second viewer got nothing"); return }
        one.close()
        two.close()
        #expect(live.viewerCount == 0)
        await stopAndDrain(session, log)
        for (a, b) in zip(sequences, sequences.dropFirst()) { #expect(b > a, "frames do not advance: \(sequences)") }
        // 30 fps camera, at most 10 JPEGs a second: consecutive JPEGs are about 3 frames apart.
        #expect(sequences.last! - sequences.first! >= 10, "more than 10 JPEGs a second: \(sequences)")
    }

    @Test func mp4ViewerGetsTheRecordingEncodersPacketsFromAKeyframe() async throws {
        let dir = try TemporaryDirectory()
        defer { dir.remove() }
        let (live, _, session, log) = try await startEncodedCamera(recordingInto: dir)
        // A camera that is encoded has raw frames: MJPEG is offered too.
        #expect(live.mjpegViewer().map { $0.close(); return true } == true)
        let viewer = try #require(live.mp4Viewer())
        var stream = Data()
        var messages = 0
        while messages < 40, let message = await viewer.next() {
            guard case .data(let bytes) = message else { Issue.record("unexpected \(message)"); break }
            stream.append(bytes)
            messages += 1
        }
        viewer.close()
        await stopAndDrain(session, log)
        let decoded = try decode(stream, in: dir, name: "live.mp4")
        #expect(decoded.codec == "h264")
        #expect(decoded.startsWithKeyframe)
        #expect(decoded.sequences.count >= 39)
        _ = expectContiguous([decoded])
    }

    @Test func slowViewersAreSkippedAndCaptureDropsNothing() async throws {
        let dir = try TemporaryDirectory()
        defer { dir.remove() }
        let (live, movie, session, log) = try await startEncodedCamera(recordingInto: dir)
        let slowJPEG = try #require(live.mjpegViewer())
        let slowMP4 = try #require(live.mp4Viewer())
        let fast = try #require(live.mjpegViewer())
        // The fast one reads for three seconds, and on a busy machine on until it has had 15
        // JPEGs and the slow ones were skipped (30 s at most); the slow ones read nothing meanwhile.
        let started = SystemClocks.monotonicNanos()
        var fastFrames = 0
        while SystemClocks.monotonicNanos() - started < 3_000_000_000
                || (SystemClocks.monotonicNanos() - started < 30_000_000_000
                    && (fastFrames < 15 || slowJPEG.skippedCount <= 10 || slowMP4.skippedCount == 0)),
              case .data = await fast.next() { fastFrames += 1 }
        #expect(fastFrames >= 15)
        #expect(slowJPEG.skippedCount > 10, "the slow MJPEG viewer was not skipped ahead")
        #expect(slowMP4.skippedCount > 0, "the slow fMP4 viewer was not skipped ahead")
        // The fMP4 viewer resumes at a keyframe and is told how much it missed.
        var sawSkip = false
        var afterSkip = Data()
        var initSegment = Data()
        while let message = await slowMP4.next() {
            switch message {
            case .skipped(let n):
                #expect(n > 0)
                sawSkip = true
            case .data(let bytes):
                if initSegment.isEmpty { initSegment = bytes } else if sawSkip { afterSkip.append(bytes) }
            }
            if afterSkip.count > 0 && sawSkip { break }
        }
        // A stream from the init segment and the first fragment after the skip decodes.
        slowMP4.close()
        slowJPEG.close()
        fast.close()
        await stopAndDrain(session, log)
        #expect(sawSkip)
        let resumed = try decode(initSegment + afterSkip, in: dir, name: "resumed.mp4")
        #expect(resumed.startsWithKeyframe)
        // Capture lost nothing: no output dropped a frame, and the recording is contiguous.
        #expect(log.drops.isEmpty, "dropped: \(log.drops)")
        #expect(movie.droppedFrameCount == 0 && live.droppedFrameCount == 0)
        let files = RecordingInspector.files(under: dir.path, endingWith: ".mp4").filter { !$0.hasSuffix("resumed.mp4") && !$0.hasSuffix("live.mp4") }
        _ = expectContiguous(try files.map { try RecordingInspector.decode($0) })
    }

    /// An H.264 network camera: nothing is encoded. The snapshot decodes the run since the last
    /// keyframe; the fMP4 viewer gets the camera's own packets from a keyframe, with their
    /// presentation times when B-frames reorder them; MJPEG is refused.
    @Test(arguments: [0, 2]) func h264CameraIsWatchedWithoutAnEncoder(bframes: Int) async throws {
        let server = try LoopbackCameraServer.rtsp(gop: 15, bframes: bframes)
        defer { server.stop() }
        let dir = try TemporaryDirectory()
        defer { dir.remove() }
        let live = LiveOutput()
        let device = NetworkCamera.device(id: "porch", url: server.url())
        let (session, log) = try startSession(device: device, format: .preset(.high), fps: 15, outputs: [(live, .init())])
        #expect(await waitUntil(seconds: 30) { live.mp4.isH264 == true })
        #expect(live.mjpegViewer() == nil)
        let viewer = try #require(live.mp4Viewer())
        var stream = Data()
        for _ in 0..<20 {
            guard case .data(let bytes) = await viewer.next() else { Issue.record("viewer ended"); break }
            stream.append(bytes)
        }
        viewer.close()
        let shot = try await live.snapshot()
        await stopAndDrain(session, log)
        let decoded = try decode(stream, in: dir, name: "live.mp4")
        #expect(decoded.codec == "h264" && decoded.startsWithKeyframe && decoded.sequences.count >= 19)
        if bframes > 0 {
            let times = RecordingInspector.run("/usr/bin/ffprobe", ["-v", "error", "-show_entries", "packet=pts,dts", "-of", "csv=p=0", "\(dir.path)/live.mp4"])
            let reordered = times.output.split(separator: "\n").contains { line in
                let t = line.split(separator: ",").compactMap { Int($0) }
                return t.count == 2 && t[0] > t[1]
            }
            #expect(reordered, "no fragment shown after its decode time: \(times.output.prefix(300))")
        }
        let still = try decode(shot.data, in: dir, name: "shot.jpg")
        #expect(still.width == 160 && still.height == 120 && still.sequences.count == 1)
    }

    @Test func viewersEndWhenTheCameraStops() async throws {
        let live = LiveOutput()
        let (session, log) = try startSession(
            format: .size(width: 160, height: 120, pixelFormat: .yuyv422), fps: 15, outputs: [(live, .init())])
        let viewer = try #require(live.mjpegViewer())
        guard case .data = await viewer.next() else { Issue.record("no frame"); return }
        await stopAndDrain(session, log)
        while let message = await viewer.next() { _ = message }
        #expect(viewer.isClosed)
        #expect(live.viewerCount == 0)
    }
}
