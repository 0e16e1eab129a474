@testable import Capture
import CaptureTesting
import Foundation
import Media
import Plumbing
import RTSP
import Testing

/// Network cameras against real servers on loopback: gst-rtsp-server (H.264, H.265) and an
/// HTTP multipart MJPEG server. Segments are 1 s, keyframes every 1/3 s, 160x120 at 15 fps.
@Suite(.serialized, .timeLimit(.minutes(2))) struct NetworkCameraTests {
    /// Short limits so that stalls and retries happen within a test.
    static let fast = NetworkCamera.Settings(connectTimeoutNanos: 2_000_000_000, minimumStallNanos: 1_500_000_000)
    /// A probe's one deadline: what it has not seen by then, it does not say.
    static let probeTimeout: Int64 = 5_000_000_000

    func record(_ url: String, settings: NetworkCamera.Settings = fast, into dir: TemporaryDirectory) throws -> (CaptureSession, EventLog, SegmentedMovieOutput) {
        let movie = try SegmentedMovieOutput(.init(storageRoot: dir.path, segmentSeconds: 1, encoding: .streamCopy))
        let device = NetworkCamera.device(id: "porch", url: url, settings: settings)
        let (session, log) = try startSession(device: device, format: .preset(.high), fps: 15, outputs: [(movie, .init())])
        return (session, log, movie)
    }

    /// Every segment decodes without errors, starts with a keyframe, holds every frame it counted,
    /// and follows the one before it by one frame interval (no frame lost or repeated at a cut).
    func expectPlayableAndContiguous(
        _ log: EventLog, codec: String, width: Int = 160, height: Int = 120, sourceLocation: SourceLocation = #_sourceLocation) throws {
        let segments = log.segments.sorted { $0.firstFrameWallNanos < $1.firstFrameWallNanos }
        #expect(!segments.isEmpty, sourceLocation: sourceLocation)
        for s in segments {
            #expect(RecordingInspector.ffprobeProblem(s.path) == nil, "\(s.path) does not decode", sourceLocation: sourceLocation)
            let decoded = try RecordingInspector.decode(s.path)
            #expect(decoded.startsWithKeyframe, "\(s.path) does not start with a keyframe", sourceLocation: sourceLocation)
            #expect(decoded.sequences.count == s.frameCount, "\(s.path): \(decoded.sequences.count) frames decode of \(s.frameCount)", sourceLocation: sourceLocation)
            #expect(decoded.codec == codec && decoded.width == width && decoded.height == height, sourceLocation: sourceLocation)
        }
        return
    }

    /// Records `url` into `dir` until `segments` segments are finished, stops, and checks that
    /// every segment plays (`expectPlayableAndContiguous`).
    func recordPlayable(_ url: String, into dir: TemporaryDirectory, segments: Int, codec: String, sourceLocation: SourceLocation = #_sourceLocation) async throws -> EventLog {
        let (session, log, _) = try record(url, into: dir)
        #expect(await waitUntil(seconds: 30) { log.segments.count >= segments }, sourceLocation: sourceLocation)
        await stopAndDrain(session, log)
        try expectPlayableAndContiguous(log, codec: codec, sourceLocation: sourceLocation)
        return log
    }

    /// Segments cut within one run of the stream: the next starts one frame interval (1/15 s)
    /// after the last frame of the one before, on a keyframe after the wall-clock boundary.
    func expectGapless(_ segments: [SegmentInfo], sourceLocation: SourceLocation = #_sourceLocation) {
        for (a, b) in zip(segments, segments.dropFirst()) {
            let gap = b.firstFrameWallNanos - a.lastFrameWallNanos
            #expect(gap > 0 && gap < 100_000_000, "\(a.path) → \(b.path): \(gap / 1_000_000) ms between frames", sourceLocation: sourceLocation)
        }
    }

    func steady(codec: String, probeCodec: String, tag: String) async throws {
        let server = try LoopbackCameraServer.rtsp(codec: codec)
        defer { server.stop() }
        let dir = try TemporaryDirectory()
        defer { dir.remove() }
        let (session, log, movie) = try record(server.url(), into: dir)
        #expect(await waitUntil(seconds: 30) { log.segments.count >= 3 })
        await stopAndDrain(session, log)
        #expect(RecordingInspector.files(under: dir.path, endingWith: ".partial").isEmpty)
        let segments = log.segments.sorted { $0.firstFrameWallNanos < $1.firstFrameWallNanos }
        try expectPlayableAndContiguous(log, codec: probeCodec)
        expectGapless(segments)
        for s in segments {
            #expect(s.path.hasSuffix(".mp4"))
            #expect(SegmentProbe.codecTag(s.path) == tag, "\(s.path) is tagged \(SegmentProbe.codecTag(s.path))")
        }
        // The first frames before the first keyframe are all a segment cannot hold.
        #expect(segments.map(\.frameCount).reduce(0, +) + 5 >= movie.receivedFrameCount)
        #expect(!log.all.contains { if case .interrupted = $0 { true } else { false } })
    }

    @Test func recordsH264WithoutDecoding() async throws {
        try await steady(codec: "h264", probeCodec: "h264", tag: "avc1")
    }

    @Test func recordsH265TaggedHvc1() async throws {
        try await steady(codec: "h265", probeCodec: "hevc", tag: "hvc1")
    }

    /// A cluster lease's fence: closed, the open file ends at once and the frames after are
    /// dropped (nothing is written while it is closed); opened, recording resumes in a new file
    /// that starts at a keyframe. Every file plays.
    @Test func aClosedFenceEndsTheFileAndDropsFramesUntilItOpens() async throws {
        let server = try LoopbackCameraServer.rtsp()
        defer { server.stop() }
        let dir = try TemporaryDirectory()
        defer { dir.remove() }
        let fence = CaptureFence()
        let movie = try SegmentedMovieOutput(.init(storageRoot: dir.path, segmentSeconds: 2, encoding: .streamCopy))
        let session = CaptureSession(fence: fence)
        let log = EventLog(session)
        session.beginConfiguration()
        try session.addInput(NetworkCamera.device(id: "porch", url: server.url(), settings: Self.fast))
        try session.addOutput(movie)
        try session.commitConfiguration()
        try session.startRunning()
        #expect(await waitUntil(seconds: 30) { movie.receivedFrameCount > 20 })
        let closed = SystemClocks.wallNanos()
        fence.close(atBootNanos: SystemClocks.bootNanos())
        // The file open then ends without waiting for its two seconds.
        #expect(await waitUntil(seconds: 30) { log.segments.contains { $0.lastFrameWallNanos <= closed + 500_000_000 && $0.lastFrameWallNanos >= closed - 2_000_000_000 } })
        let receivedWhileClosed = movie.receivedFrameCount
        try await Task.sleep(for: .seconds(2))
        #expect(movie.receivedFrameCount <= receivedWhileClosed + 3, "frames reached the output through a closed fence")
        let opened = SystemClocks.wallNanos()
        fence.open()
        #expect(await waitUntil(seconds: 10) { log.segments.contains { $0.firstFrameWallNanos >= opened } })
        await stopAndDrain(session, log)
        // Nothing recorded while it was closed. A frame's time is when the camera took it, the
        // fence acts when the capture thread reads it, and on a loaded machine the two differ by
        // the frames waiting in the socket: half a second either side.
        let slack: Int64 = 500_000_000
        #expect(opened - closed >= 4 * slack)
        for segment in log.segments {
            #expect(segment.lastFrameWallNanos <= closed + slack || segment.firstFrameWallNanos >= opened - slack, "\(segment)")
        }
        try expectPlayableAndContiguous(log, codec: "h264")
    }

    @Test func stallIsNoticedAndRecovered() async throws {
        let server = try LoopbackCameraServer.rtsp()
        defer { server.stop() }
        let dir = try TemporaryDirectory()
        defer { dir.remove() }
        let (session, log, _) = try record(server.url(), into: dir)
        #expect(await waitUntil(seconds: 30) { log.segments.count >= 1 })
        server.signal(SIGSTOP)
        #expect(await waitUntil(seconds: 20) { log.interruptions.contains { $0.contains("stall") } }, "\(log.interruptions)")
        // Its kind travels with it, for metrics and the supervisor (not guessed from the words).
        #expect(log.lossCauses.first == .stalled, "\(log.lossCauses)")
        // The segment open at the stall is finalized then (the outputs hear of the loss just
        // after the event), not at the end.
        #expect(await waitUntil(seconds: 10) { RecordingInspector.files(under: dir.path, endingWith: ".partial").isEmpty })
        let finishedAtStall = log.segments.count
        try await Task.sleep(nanoseconds: 1_000_000_000)
        server.signal(SIGCONT)
        #expect(await waitUntil(seconds: 40) { log.resumptions >= 1 })
        #expect(await waitUntil(seconds: 30) { log.segments.count >= finishedAtStall + 2 })
        await stopAndDrain(session, log)
        try expectPlayableAndContiguous(log, codec: "h264")
    }

    @Test func serverKilledAndRestartedOnTheSamePort() async throws {
        var server = try LoopbackCameraServer.rtsp()
        let port = server.port
        let dir = try TemporaryDirectory()
        defer { dir.remove() }
        let (session, log, _) = try record(server.url(), into: dir)
        #expect(await waitUntil(seconds: 30) { log.segments.count >= 1 })
        server.stop()
        #expect(await waitUntil(seconds: 20) { !log.interruptions.isEmpty })
        server = try LoopbackCameraServer.rtsp(port: port)
        defer { server.stop() }
        #expect(await waitUntil(seconds: 40) { log.resumptions >= 1 }, "\(log.interruptions)")
        let before = log.segments.count
        #expect(await waitUntil(seconds: 30) { log.segments.count >= before + 2 })
        await stopAndDrain(session, log)
        try expectPlayableAndContiguous(log, codec: "h264")
    }

    @Test func cameraDownAtStartIsRetried() async throws {
        let port = LoopbackCameraServer.freePort()
        let dir = try TemporaryDirectory()
        defer { dir.remove() }
        let (session, log, _) = try record("rtsp://127.0.0.1:\(port)/cam", into: dir)
        #expect(await waitUntil(seconds: 20) { log.interruptions.contains { $0.contains("refused") } }, "\(log.interruptions)")
        let server = try LoopbackCameraServer.rtsp(port: port)
        defer { server.stop() }
        #expect(await waitUntil(seconds: 40) { log.resumptions >= 1 })
        #expect(await waitUntil(seconds: 30) { log.segments.count >= 2 })
        await stopAndDrain(session, log)
        try expectPlayableAndContiguous(log, codec: "h264")
    }

    @Test func wrongPasswordIsNamedAndNeverShown() async throws {
        let server = try LoopbackCameraServer.rtsp(user: "viewer", password: "right-secret")
        defer { server.stop() }
        let dir = try TemporaryDirectory()
        defer { dir.remove() }
        let (session, log, _) = try record(server.url(user: "viewer", password: "wrong-secret"), into: dir)
        #expect(await waitUntil(seconds: 20) { log.interruptions.contains { $0.contains("401") } }, "\(log.interruptions)")
        await stopAndDrain(session, log)
        #expect(log.segments.isEmpty)
        for event in log.all { #expect(!event.description.contains("secret"), "\(event)") }
        #expect(log.interruptions.allSatisfy { $0.contains("rtsp://***@127.0.0.1") })
        #expect(!session.device!.description.contains("secret") && !session.device!.name.contains("secret"))
    }

    /// The camera's retry ladder outlives its sessions: a session started again while the camera
    /// still refuses goes on climbing where the last one left off. (A ladder per session let
    /// every restart retry at once: a wrong password was tried every second.)
    @Test func theRetryLadderSurvivesASessionRestart() async throws {
        let server = try LoopbackCameraServer.rtsp(user: "viewer", password: "right-secret")
        defer { server.stop() }
        let dir = try TemporaryDirectory()
        defer { dir.remove() }
        let device = NetworkCamera.device(id: "porch", url: server.url(user: "viewer", password: "wrong-secret"), settings: Self.fast)
        let retries = try #require(device.backend as? NetworkCamera).retries
        let (first, firstLog) = try startSession(device: device, format: .preset(.high), fps: 15, outputs: [])
        #expect(await waitUntil(seconds: 20) { retries.failures >= 2 })
        await stopAndDrain(first, firstLog)
        let before = retries.failures
        let (second, secondLog) = try startSession(device: device, format: .preset(.high), fps: 15, outputs: [])
        #expect(await waitUntil(seconds: 20) { retries.failures > before }, "the second session never tried")
        await stopAndDrain(second, secondLog)
        #expect(retries.failures > before, "the ladder started again: \(retries.failures) failures after \(before)")
        #expect(secondLog.interruptions.count == 1 && secondLog.interruptions[0].contains("401"), "\(secondLog.interruptions)")
        #expect(secondLog.resumptions == 0)
    }

    /// Basic, and Digest (RFC 2617), which most cameras ask for and which never sends the password.
    @Test(arguments: [false, true]) func rightPasswordRecords(digest: Bool) async throws {
        let server = try LoopbackCameraServer.rtsp(user: "viewer", password: "right-secret", digest: digest)
        defer { server.stop() }
        if digest {
            let probe = try NetworkProbe(url: server.url(user: "viewer", password: "right-secret"), timeoutNanos: Self.probeTimeout)
            #expect(probe.codec == "h264" && probe.width == 160 && probe.height == 120)
            do {
                _ = try NetworkProbe(url: server.url(user: "viewer", password: "wrong-secret"), timeoutNanos: Self.probeTimeout)
                Issue.record("a wrong password was accepted")
            } catch {
                #expect(error.failure == .unauthorized(credentialsGiven: true) && !error.description.contains("secret"))
            }
        }
        let dir = try TemporaryDirectory()
        defer { dir.remove() }
        _ = try await recordPlayable(server.url(user: "viewer", password: "right-secret"), into: dir, segments: 1, codec: "h264")
    }

    /// A camera that ends sessions silent for 3 s (strict cameras do, after their 60 s): the
    /// client's keep-alives hold the session through three times that, in one connection.
    @Test func keepAlivesHoldASessionPastItsTimeout() async throws {
        let server = try LoopbackCameraServer.rtsp(sessionTimeoutSeconds: 3)
        defer { server.stop() }
        let dir = try TemporaryDirectory()
        defer { dir.remove() }
        let (session, log, _) = try record(server.url(), into: dir)
        #expect(await waitUntil(seconds: 30) { log.segments.count >= 1 })
        // Nine more one-second segments span three of the camera's 3 s timeouts.
        #expect(await waitUntil(seconds: 60) { log.segments.count >= 10 || !log.interruptions.isEmpty }, "\(log.segments.count) segments")
        await stopAndDrain(session, log)
        #expect(log.interruptions.isEmpty, "\(log.interruptions)")
        try expectPlayableAndContiguous(log, codec: "h264")
        expectGapless(log.segments.sorted { $0.firstFrameWallNanos < $1.firstFrameWallNanos })
    }

    /// A camera that sends audio too: the probe names it, and only the video is set up and recorded.
    @Test func audioIsNamedAndLeftOut() async throws {
        let server = try LoopbackCameraServer.rtsp(audio: true)
        defer { server.stop() }
        let probe = try NetworkProbe(url: server.url(), timeoutNanos: Self.probeTimeout)
        #expect(probe.codec == "h264" && probe.audioCodec == "pcm_alaw", "\(probe)")
        #expect(probe.description.contains("audio: pcm_alaw (ignored"))
        let dir = try TemporaryDirectory()
        defer { dir.remove() }
        let log = try await recordPlayable(server.url(), into: dir, segments: 2, codec: "h264")
        for s in log.segments {
            let streams = RecordingInspector.run("/usr/bin/ffprobe", ["-v", "error", "-show_entries", "stream=codec_type", "-of", "csv=p=0", s.path])
            #expect(streams.output.trimmingCharacters(in: .whitespacesAndNewlines) == "video", "\(s.path): \(streams.output)")
        }
    }

    /// A camera sending what Vigil's RTSP client does not depacketize (MJPEG over RTP, RFC
    /// 2435) is read through libavformat instead, and recorded as it is.
    @Test func mjpegOverRTSPIsRecordedThroughLibavformat() async throws {
        let server = try LoopbackCameraServer.rtsp(codec: "mjpeg")
        defer { server.stop() }
        let dir = try TemporaryDirectory()
        defer { dir.remove() }
        let log = try await recordPlayable(server.url(), into: dir, segments: 2, codec: "mjpeg")
        #expect(log.segments.allSatisfy { $0.path.hasSuffix(".mkv") })
    }

    /// A stop while a connection attempt waits on a server that never answers returns at once
    /// (the attempt's own deadline is a minute away).
    @Test func stopWhileReconnecting() async throws {
        let server = try LoopbackCameraServer.rtsp()
        defer { server.stop() }
        server.signal(SIGSTOP)
        let dir = try TemporaryDirectory()
        defer { dir.remove() }
        let patient = NetworkCamera.Settings(connectTimeoutNanos: 60_000_000_000, minimumStallNanos: 60_000_000_000)
        let (session, log, _) = try record(server.url(), settings: patient, into: dir)
        try await Task.sleep(nanoseconds: 500_000_000)
        let stopped = Task { await session.stop() }
        #expect(await waitUntil(seconds: 20) { log.hasStopped }, "stop waited for the connection attempt")
        await stopped.value
        #expect(log.segments.isEmpty)
    }

    /// Stills from H.264 and H.265: each decodes from the run of frames since its keyframe.
    @Test(arguments: ["h264", "h265"]) func stillsFromACompressedStream(codec: String) async throws {
        let server = try LoopbackCameraServer.rtsp(codec: codec)
        defer { server.stop() }
        let dir = try TemporaryDirectory()
        defer { dir.remove() }
        let timelapse = try TimelapseOutput(.init(storageRoot: dir.path, intervalSeconds: 1))
        let device = NetworkCamera.device(id: "porch", url: server.url(), settings: Self.fast)
        let (session, log) = try startSession(device: device, format: .preset(.high), fps: 15, outputs: [(timelapse, .init())])
        #expect(await waitUntil(seconds: 30) { log.stills.count >= 3 })
        await stopAndDrain(session, log)
        #expect(log.errors.isEmpty, "\(log.errors)")
        for still in log.stills {
            #expect(RecordingInspector.ffprobeProblem(still.path) == nil)
            let decoded = try RecordingInspector.decode(still.path)
            #expect(decoded.width == 160 && decoded.height == 120)
            #expect(still.frameWallNanos >= still.shotWallNanos)
        }
    }

    /// `vigil devices --url`: what the camera sends, or why it cannot be reached, never its password.
    @Test func probeSaysWhatTheCameraSends() throws {
        let server = try LoopbackCameraServer.rtsp(codec: "h265", user: "viewer", password: "right-secret")
        defer { server.stop() }
        let probe = try NetworkProbe(url: server.url(user: "viewer", password: "right-secret"), timeoutNanos: Self.probeTimeout)
        #expect(probe.codec == "hevc" && probe.width == 160 && probe.height == 120 && probe.isRecordable)
        #expect(probe.audioCodec == nil)
        let interval = try #require(probe.keyframeIntervalSeconds)
        #expect(abs(interval - 5.0 / 15) < 0.01, "keyframe every \(interval) s, the server's GOP is 5 frames at 15 fps")
        #expect(probe.description.contains("rtsp://***@127.0.0.1") && !probe.description.contains("secret"))
        do {
            _ = try NetworkProbe(url: server.url(user: "viewer", password: "wrong-secret"), timeoutNanos: Self.probeTimeout)
            Issue.record("a wrong password was accepted")
        } catch {
            #expect(error.failure == .unauthorized(credentialsGiven: true) && !error.description.contains("secret"))
            #expect(error.description.contains("wrong user or password"), "\(error)")
        }
        // No user in the address: the camera wants one, which is not "wrong user or password".
        do {
            _ = try NetworkProbe(url: server.url(), timeoutNanos: Self.probeTimeout)
            Issue.record("an address without a user was accepted")
        } catch {
            #expect(error.failure == .unauthorized(credentialsGiven: false), "\(error)")
            #expect(error.description.contains("the address has none") && !error.description.contains("wrong user"), "\(error)")
        }
        do {
            _ = try NetworkProbe(url: "rtsp://127.0.0.1:\(server.port)/nothing-here", timeoutNanos: Self.probeTimeout)
            Issue.record("a wrong path was accepted")
        } catch {
            #expect(error.failure == .notFound, "\(error)")
        }
    }
}

extension EventLog {
    var interruptions: [String] {
        all.compactMap { if case .interrupted(_, _, let r) = $0 { return r } else { return nil } }
    }
    var lossCauses: [LossCause] {
        all.compactMap { if case .interrupted(_, let cause, _) = $0 { return cause } else { return nil } }
    }
    var resumptions: Int {
        all.filter { if case .interruptionEnded = $0 { true } else { false } }.count
    }
}
