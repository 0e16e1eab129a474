@testable import Capture
import CaptureTesting
import Foundation
import Media
import Testing

/// A network camera whose delivery stalls (a congested link: nothing arrives for seconds) and
/// then sends the held frames in one burst, through a TCP proxy stopped and resumed. The stall
/// is latency, not a gap: every frame is recorded once, files neither overlap nor go back in
/// time, and nothing is dropped. Before, an RTSP camera's 3.5 s stall was taken for a jump of
/// its clock (13 frames skipped, a false 3.5 s gap, four files overlapping, names back in
/// time), and an MJPEG camera's burst overflowed a queue of a quarter second. A camera whose
/// clock is set (its timestamps jump) starts a new file, and loses nothing either.
@Suite(.serialized, .timeLimit(.minutes(2))) struct StallAndBurstTests {
    /// Records `url` (through a proxy in front of `upstreamPort`) in 1 s segments, stalls the
    /// proxy for `stallSeconds` once frames flow, then records a few more seconds.
    private func recordThroughAStall(
        upstreamPort: Int, url: (Int) -> String, stallSeconds: Double, into dir: TemporaryDirectory
    ) async throws -> (EventLog, SegmentedMovieOutput) {
        let proxy = try TCPProxy(upstreamPort: upstreamPort)
        defer { proxy.stop() }
        let movie = try SegmentedMovieOutput(.init(storageRoot: dir.path, segmentSeconds: 1, encoding: .streamCopy))
        let device = NetworkCamera.device(id: "porch", url: url(proxy.port), settings: .init(connectTimeoutNanos: 5_000_000_000))
        let (session, log) = try startSession(device: device, format: .preset(.high), fps: 15, outputs: [(movie, .init())])
        #expect(await waitUntil(seconds: 30) { movie.receivedFrameCount >= 30 })
        proxy.cut()
        try await Task.sleep(nanoseconds: UInt64(stallSeconds * 1e9))
        let beforeBurst = movie.receivedFrameCount
        proxy.heal()
        // The burst, then real time again for a few segments.
        #expect(await waitUntil(seconds: 30) { movie.receivedFrameCount >= beforeBurst + Int(stallSeconds * 10) + 45 })
        await stopAndDrain(session, log)
        return (log, movie)
    }

    /// Every frame received is in exactly one file; files follow one another without overlap,
    /// names in time order, and with no gap between consecutive files beyond `maximumGapNanos`.
    private func expectEveryFrameOnceInOrder(_ log: EventLog, _ movie: SegmentedMovieOutput, maximumGapNanos: Int64) throws {
        #expect(movie.droppedFrameCount == 0, "\(movie.droppedFrameCount) frame(s) dropped")
        let segments = log.segments.sorted { $0.firstFrameWallNanos < $1.firstFrameWallNanos }
        #expect(segments.map(\.frameCount).reduce(0, +) == movie.receivedFrameCount, "frames received but not in a file")
        #expect(segments.map(\.path) == segments.map(\.path).sorted(), "file names go back in time: \(segments.map { ($0.path as NSString).lastPathComponent })")
        for (a, b) in zip(segments, segments.dropFirst()) {
            let gap = b.firstFrameWallNanos - a.lastFrameWallNanos
            #expect(gap > 0 && gap <= maximumGapNanos, "\(a.path) → \(b.path): \(gap / 1_000_000) ms between their frames")
        }
        for s in segments {
            let decoded = try RecordingInspector.decode(s.path)
            #expect(decoded.startsWithKeyframe && decoded.sequences.count == s.frameCount, "\(s.path)")
        }
        #expect(!log.all.contains { if case .segmentDiscarded = $0 { true } else { false } })
    }

    /// RTSP H.264 at 15 fps: the camera's times run on through the stall, so the files do too.
    @Test(arguments: [3.5, 5.0]) func anRTSPCamerasStallAndBurstIsLatencyNotAGap(stallSeconds: Double) async throws {
        let server = try LoopbackCameraServer.rtsp()
        defer { server.stop() }
        let dir = try TemporaryDirectory()
        defer { dir.remove() }
        let (log, movie) = try await recordThroughAStall(
            upstreamPort: server.port, url: { "rtsp://127.0.0.1:\($0)/cam" }, stallSeconds: stallSeconds, into: dir)
        // Consecutive frames of the camera: 1/15 s apart, however late they arrived.
        try expectEveryFrameOnceInOrder(log, movie, maximumGapNanos: 100_000_000)
        // The whole recording spans its frames at the camera's rate: no false gap.
        let segments = log.segments.sorted { $0.firstFrameWallNanos < $1.firstFrameWallNanos }
        let span = Double(segments.last!.lastFrameWallNanos - segments.first!.firstFrameWallNanos) / 1e9
        let frames = Double(movie.receivedFrameCount - 1) / 15
        #expect(abs(span - frames) < 0.2, "\(span) s of files for \(frames) s of frames")
    }

    /// RTSP H.264 at 15 fps whose clock is set 20 s forward, then 20 s back (its RTP timestamps
    /// jump, as a camera's that takes a new time from NTP): each jump starts a new run of the
    /// camera's times, and a new file at the next keyframe (the frames before it go on in the
    /// open one); no frame is lost, files do not overlap, names keep their order. Before, the
    /// clock re-anchored and one file went on across both jumps.
    @Test func anRTSPCamerasClockJumpStartsANewFileAtTheNextKeyframe() async throws {
        let server = try LoopbackCameraServer.rtsp(gop: 15)
        defer { server.stop() }
        let dir = try TemporaryDirectory()
        defer { dir.remove() }
        let proxy = try TCPProxy(upstreamPort: server.port, rtpJumps: true)
        defer { proxy.stop() }
        // Hour-long segments: only the jumps (and, rarely, the hour's grid) cut.
        let movie = try SegmentedMovieOutput(.init(storageRoot: dir.path, segmentSeconds: 3600, encoding: .streamCopy))
        let device = NetworkCamera.device(id: "porch", url: "rtsp://127.0.0.1:\(proxy.port)/cam", settings: .init(connectTimeoutNanos: 5_000_000_000))
        let (session, log) = try startSession(device: device, format: .preset(.high), fps: 15, outputs: [(movie, .init())])
        var jumps: [Int64] = []
        for forward in [true, false, nil] {
            let before = movie.receivedFrameCount
            #expect(await waitUntil(seconds: 30) { movie.receivedFrameCount >= before + 30 })
            guard let forward else { break }
            jumps.append(Int64(Date().timeIntervalSince1970 * 1e9))
            proxy.jumpCameraClock(forward: forward)
        }
        await stopAndDrain(session, log)
        try expectEveryFrameOnceInOrder(log, movie, maximumGapNanos: 200_000_000)
        let starts = log.segments.map(\.firstFrameWallNanos).sorted()
        #expect(starts.count == 3 || starts.count == 4, "one file per run of the camera's clock: \(starts.count) files")
        for jump in jumps {
            // The next keyframe is at most a second (15 frames) after the jump; a loaded machine
            // may take a while to read it.
            #expect(starts.contains { $0 >= jump - 100_000_000 && $0 <= jump + 2_500_000_000 }, "no file starts within 2.5 s of the jump")
        }
    }

    /// HTTP MJPEG at 10 fps (no camera times): the burst is squeezed, and none of it is lost.
    @Test func anMJPEGCamerasBurstAfterAStallLosesNothing() async throws {
        let jpegDir = try TemporaryDirectory()
        defer { jpegDir.remove() }
        let pattern = "\(jpegDir.path)/frame%d.jpg"
        let made = RecordingInspector.run("/usr/bin/env", [
            "ffmpeg", "-v", "error", "-f", "lavfi", "-i", "testsrc=size=320x240:rate=10", "-frames:v", "20", "-q:v", "2", pattern])
        #expect(made.status == 0, "\(made.errorOutput)")
        let server = try LoopbackCameraServer.mjpeg(jpegs: (1...20).map { "\(jpegDir.path)/frame\($0).jpg" }, fps: 10)
        defer { server.stop() }
        let dir = try TemporaryDirectory()
        defer { dir.remove() }
        let (log, movie) = try await recordThroughAStall(
            upstreamPort: server.port, url: { "http://127.0.0.1:\($0)/video.mjpg" }, stallSeconds: 5, into: dir)
        // A pause of an MJPEG camera stays a pause in its files (its times are its arrivals).
        try expectEveryFrameOnceInOrder(log, movie, maximumGapNanos: 6_000_000_000)
    }
}
