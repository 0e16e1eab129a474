import Capture
import CaptureTesting
import Foundation
import Media
import Testing

@Suite(.timeLimit(.minutes(2))) struct SegmentedMovieOutputTests {
    @Test func framesAreContiguousAcrossSegmentBoundaries() async throws {
        let dir = try TemporaryDirectory()
        defer { dir.remove() }
        let movie = try SegmentedMovieOutput(.init(storageRoot: dir.path, segmentSeconds: 1))
        let (session, log) = try startSession(format: .size(width: 160, height: 120, pixelFormat: .yuyv422), fps: 20, outputs: [(movie, .init())])
        // At least three boundaries means at least four finished segments.
        #expect(await waitUntil(seconds: 20) { log.segments.count >= 4 })
        await stopAndDrain(session, log)

        let files = RecordingInspector.files(under: dir.path, endingWith: ".mp4")
        #expect(RecordingInspector.files(under: dir.path, endingWith: ".partial").isEmpty)
        #expect(files.count >= 5)
        #expect(files == log.segments.map(\.path).sorted())
        let decoded = try files.map { try RecordingInspector.decode($0) }
        for d in decoded {
            #expect(RecordingInspector.ffprobeProblem(d.path) == nil)
            #expect(d.startsWithKeyframe, "\(d.path) does not start with a keyframe")
            #expect(d.codec == "h264" && d.width == 160 && d.height == 120)
        }
        let seqs = expectContiguous(decoded)
        #expect(movie.droppedFrameCount == 0)
        #expect(seqs.count == movie.receivedFrameCount)
        #expect(seqs.count == session.capturedFrameCount)
        // Boundaries sit on whole seconds of wall time: every frame of a segment shares its second,
        // except the first segment, which starts whenever recording started.
        let infos = log.segments.sorted { $0.firstFrameWallNanos < $1.firstFrameWallNanos }
        for s in infos {
            #expect(s.firstFrameWallNanos / 1_000_000_000 == s.lastFrameWallNanos / 1_000_000_000, "\(s.path) spans a boundary")
        }
        for (a, b) in zip(infos, infos.dropFirst()) {
            #expect(b.firstFrameWallNanos / 1_000_000_000 > a.lastFrameWallNanos / 1_000_000_000)
        }
    }

    @Test func streamCopyRecordsCameraJPEGsWithoutLoss() async throws {
        let dir = try TemporaryDirectory()
        defer { dir.remove() }
        let movie = try SegmentedMovieOutput(.init(storageRoot: dir.path, segmentSeconds: 1, encoding: .streamCopy))
        #expect(movie.settings.container == .matroska)
        let (session, log) = try startSession(format: .size(width: 320, height: 240, pixelFormat: .mjpeg), fps: 15, outputs: [(movie, .init())])
        #expect(await waitUntil(seconds: 20) { log.segments.count >= 3 })
        await stopAndDrain(session, log)
        let files = RecordingInspector.files(under: dir.path, endingWith: ".mkv")
        #expect(files == log.segments.map(\.path).sorted())
        #expect(files.count >= 4)
        let decoded = try files.map { try RecordingInspector.decode($0) }
        for d in decoded {
            #expect(d.codec == "mjpeg")
            #expect(RecordingInspector.ffprobeProblem(d.path) == nil)
        }
        let seqs = expectContiguous(decoded)
        #expect(seqs.count == movie.receivedFrameCount && movie.droppedFrameCount == 0)
    }

    @Test func rotatedAndMirroredRecordingKeepsEveryFrame() async throws {
        let dir = try TemporaryDirectory()
        defer { dir.remove() }
        let movie = try SegmentedMovieOutput(.init(storageRoot: dir.path, segmentSeconds: 60))
        let connection = ConnectionSettings(rotation: .clockwise90, isMirrored: true)
        let (session, log) = try startSession(format: .size(width: 320, height: 240, pixelFormat: .mjpeg), fps: 15, outputs: [(movie, connection)])
        #expect(await waitUntil(seconds: 20) { movie.receivedFrameCount >= 20 })
        await stopAndDrain(session, log)
        let files = RecordingInspector.files(under: dir.path, endingWith: ".mp4")
        // One file per finished segment (two if a minute boundary fell inside), none left partial.
        #expect(!files.isEmpty && files == log.segments.map(\.path).sorted())
        #expect(RecordingInspector.files(under: dir.path, endingWith: ".partial").isEmpty)
        let decoded = try files.map { try RecordingInspector.decode($0, rotation: .clockwise90, mirrored: true) }
        #expect(decoded.allSatisfy { $0.width == 240 && $0.height == 320 })
        // Every frame the camera captured was received, none dropped, and every one is in a file.
        let seqs = expectContiguous(decoded)
        #expect(movie.droppedFrameCount == 0)
        #expect(movie.receivedFrameCount == session.capturedFrameCount)
        #expect(seqs.count == movie.receivedFrameCount)
        #expect(seqs.first == 0)
    }

    @Test func streamCopyOfUncompressedFramesIsRefused() throws {
        let movie = try SegmentedMovieOutput(.init(storageRoot: "/tmp", encoding: .streamCopy))
        let session = CaptureSession()
        session.beginConfiguration()
        try session.addInput(SyntheticCamera.device())
        try session.setFormat(.size(width: 320, height: 240, pixelFormat: .yuyv422))
        try session.setFrameRate(15)
        try session.addOutput(movie)
        #expect(throws: CaptureError.streamCopyNeedsCompressedSource(output: "the movie output", format: .yuyv422)) {
            try session.commitConfiguration()
        }
        #expect(session.activeFormat == nil)
    }
}
