import CaptureTesting
import Foundation
import Glibc
import Testing

/// `vigil run` with network cameras from a configuration file, against gst-rtsp-server on loopback.
@Suite(.serialized, .timeLimit(.minutes(3))) struct NetworkCameraRunTests {
    /// No web server: port 8080 may be another program's, and an error line would fail `record`.
    private func configuration(root: String, url: String, lostFile: String) -> String {
        """
        [storage]
        root = "\(root)"

        [http]
        listen = ""

        [hooks]
        camera_lost = "echo \\"$VIGIL_REASON\\" >> \(lostFile)"

        [cameras.porch]
        device = "\(url)"

        [[record]]
        camera = "porch"
        segment_seconds = 1
        codec = "copy"
        """
    }

    /// `vigil run` of the server's camera as porch for `seconds`, without an error, leaving an
    /// index that `vigil verify` finds true; the data folder.
    private func record(_ server: LoopbackCameraServer, seconds: Int, in dir: TemporaryDirectory) throws -> String {
        let root = dir.path + "/data", file = dir.path + "/vigil.toml"
        try configuration(root: root, url: server.url(), lostFile: dir.path + "/lost.txt").write(toFile: file, atomically: true, encoding: .utf8)
        let run = VigilBinary.run(["run", "--config", file, "--duration", "\(seconds)", "--log-level", "info"])
        #expect(run.status == 0, "\(run.errorOutput)")
        #expect(!run.errorOutput.contains(" error "), "\(run.errorOutput)")
        let disagreements = verifyProblems(root)
        #expect(disagreements.isEmpty, "the index and the files differ: \(disagreements)")
        return root
    }

    /// Camera porch at the server's `/cam` as user viewer, its password in `passwordFile`, recorded
    /// in 1 s segments, with `hooks` (lines of `[hooks]`).
    private func passwordFileConfiguration(root: String, port: Int, passwordFile: String, hooks: String = "") -> String {
        """
        [storage]
        root = "\(root)"

        [hooks]
        \(hooks)

        [cameras.porch]
        url = "rtsp://viewer@127.0.0.1:\(port)/cam"
        password_file = "\(passwordFile)"

        [[record]]
        camera = "porch"
        segment_seconds = 1
        """
    }

    /// At least two segments of camera porch, each played by ffprobe and starting at a keyframe.
    private func expectPlayableSegments(_ root: String) throws {
        let segments = RecordingInspector.files(under: root + "/porch/video", endingWith: ".mp4")
        #expect(segments.count >= 2)
        for s in segments {
            #expect(RecordingInspector.ffprobeProblem(s) == nil, "\(s)")
            #expect(try RecordingInspector.decode(s).startsWithKeyframe)
        }
    }

    @Test func recordsAnRTSPCameraAndNeverShowsItsPassword() throws {
        let server = try LoopbackCameraServer.rtsp(user: "viewer", password: "right-secret")
        defer { server.stop() }
        let dir = try TemporaryDirectory()
        defer { dir.remove() }
        let root = dir.path + "/data"
        let file = dir.path + "/vigil.toml"
        try configuration(root: root, url: server.url(user: "viewer", password: "right-secret"), lostFile: dir.path + "/lost.txt")
            .write(toFile: file, atomically: true, encoding: .utf8)
        let check = VigilBinary.run(["check-config", file])
        #expect(check.status == 0, "\(check.errorOutput)")
        #expect(check.output.contains("rtsp://***@127.0.0.1:\(server.port)/cam") && !check.output.contains("secret"), "\(check.output)")
        #expect(check.output.contains("video: h264 160x120"), "check-config probes the camera: \(check.output)")

        let run = VigilBinary.run(["run", "--config", file, "--duration", "5", "--log-level", "info"])
        #expect(run.status == 0, "\(run.errorOutput)")
        #expect(!(run.output + run.errorOutput).contains("secret"))
        try expectPlayableSegments(root)
        #expect(RecordingInspector.files(under: root, endingWith: ".partial").isEmpty)
        // The index says what the files hold (sizes, frames, times, codec and picture size).
        let disagreements = verifyProblems(root)
        #expect(disagreements.isEmpty, "\(disagreements)")
        let listing = VigilBinary.run(["recordings", "--data", root, "--json"])
        #expect(listing.status == 0 && listing.output.contains("porch") && !listing.output.contains("secret"))
        for name in ["vigil-index.sqlite3", "vigil-index.sqlite3-wal"] {
            guard let index = FileManager.default.contents(atPath: root + "/" + name) else { continue }
            #expect(index.range(of: Data("secret".utf8)) == nil, "\(name) holds the password")
        }
    }

    /// An HTTP MJPEG camera (15 fps; its frames carry no times of their own): the index gives
    /// each file the frames and span the file holds, as `vigil verify` reads and decodes them.
    @Test func anHTTPMJPEGCameraLeavesAnIndexThatVerifyFindsTrue() throws {
        let dir = try TemporaryDirectory()
        defer { dir.remove() }
        let pattern = dir.path + "/frame%d.jpg"
        let made = RecordingInspector.run("/usr/bin/env", [
            "ffmpeg", "-v", "error", "-f", "lavfi", "-i", "testsrc=size=160x120:rate=15", "-frames:v", "15", "-q:v", "2", pattern])
        try #require(made.status == 0, "\(made.errorOutput)")
        let server = try LoopbackCameraServer.mjpeg(jpegs: (1...15).map { dir.path + "/frame\($0).jpg" })
        defer { server.stop() }
        let root = dir.path + "/data", file = dir.path + "/vigil.toml"
        try configuration(root: root, url: server.mjpegURL, lostFile: dir.path + "/lost.txt")
            .replacingOccurrences(of: "segment_seconds = 1", with: "segment_seconds = 2")
            .write(toFile: file, atomically: true, encoding: .utf8)
        let run = VigilBinary.run(["run", "--config", file, "--duration", "7"])
        #expect(run.status == 0, "\(run.errorOutput)")
        let segments = RecordingInspector.files(under: root + "/porch/video", endingWith: ".mkv")
        #expect(segments.count >= 2, "\(segments)")
        let disagreements = verifyProblems(root)
        #expect(disagreements.isEmpty, "\(disagreements)")
    }

    /// The frame rate shown is the measured one: an HTTP MJPEG camera at 10 fps was said to send
    /// 25 (libavformat's guess for a stream without times), by `devices --url` and `check-config`;
    /// `devices --json --url` printed text. An RTSP camera at 12.5 fps is said from its times.
    @Test func theFrameRateShownIsTheMeasuredOne() throws {
        let dir = try TemporaryDirectory()
        defer { dir.remove() }
        let made = RecordingInspector.run("/usr/bin/env", [
            "ffmpeg", "-v", "error", "-f", "lavfi", "-i", "testsrc=size=160x120:rate=10", "-frames:v", "10", dir.path + "/frame%d.jpg"])
        try #require(made.status == 0, "\(made.errorOutput)")
        let mjpeg = try LoopbackCameraServer.mjpeg(jpegs: (1...10).map { dir.path + "/frame\($0).jpg" }, fps: 10)
        defer { mjpeg.stop() }
        // Measured on arrival over a second and a half: 10 within the jitter of a busy machine.
        func saysAboutTenFPS(_ text: String) -> Bool {
            guard let match = text.firstMatch(of: /video: mjpeg 160x120 at about ([0-9.]+) fps \(measured on arrival/), let fps = Double(match.1) else { return false }
            return abs(fps - 10) <= 0.5
        }
        let text = VigilBinary.run(["devices", "--url", mjpeg.mjpegURL])
        #expect(text.status == 0 && saysAboutTenFPS(text.output), "\(text.output)\(text.errorOutput)")
        let json = VigilBinary.run(["devices", "--json", "--url", mjpeg.mjpegURL])
        let object = try #require(try JSONSerialization.jsonObject(with: Data(json.output.utf8)) as? [String: Any], "\(json.output)")
        let fps = try #require(object["fps"] as? Double)
        #expect(abs(fps - 10) <= 0.5 && object["fps_measured_on_arrival"] as? Bool == true && object["codec"] as? String == "mjpeg", "\(object)")

        let rtsp = try LoopbackCameraServer.rtsp(fps: 12.5)
        defer { rtsp.stop() }
        let probe = VigilBinary.run(["devices", "--url", rtsp.url()])
        #expect(probe.output.contains("video: h264 160x120 at 12.5 fps"), "\(probe.output)\(probe.errorOutput)")

        let file = dir.path + "/vigil.toml"
        try configuration(root: dir.path + "/data", url: mjpeg.mjpegURL, lostFile: dir.path + "/lost.txt").write(toFile: file, atomically: true, encoding: .utf8)
        let check = VigilBinary.run(["check-config", file])
        #expect(check.output.contains("camera porch: http://127.0.0.1:\(mjpeg.port)/video.mjpg\n  video: mjpeg 160x120") && saysAboutTenFPS(check.output),
                "\(check.output)\(check.errorOutput)")
    }

    /// The API gives a network camera's picture size (its format has none: the stream's frames
    /// carry it), not 0x0.
    @Test func theAPISaysTheSizeANetworkCameraRecords() async throws {
        let server = try LoopbackCameraServer.rtsp(user: "viewer", password: "right-secret")
        defer { server.stop() }
        let dir = try TemporaryDirectory()
        defer { dir.remove() }
        let free = try Listener()
        free.close()
        let file = dir.path + "/vigil.toml"
        try configuration(root: dir.path + "/data", url: server.url(user: "viewer", password: "right-secret"), lostFile: dir.path + "/lost.txt")
            .replacingOccurrences(of: "listen = \"\"", with: "listen = \"127.0.0.1:\(free.port)\"")
            .write(toFile: file, atomically: true, encoding: .utf8)
        let process = try VigilBinary.start(["run", "--config", file], in: dir.path)
        defer { if process.isRunning { process.terminate() } }
        var cameras = ""
        let sized = await waitUntil(seconds: 30) {
            cameras = httpGet(port: free.port, "/api/v1/cameras") ?? ""
            return cameras.contains(#""width":160"#)
        }
        #expect(sized && cameras.contains(#""height":120"#), "\(cameras)")
        process.interrupt()
        #expect(await waitForExit(process, seconds: 30))
    }

    /// What a user writes: `url`, the password in a file, RTP over UDP, and no codec (a network
    /// camera is recorded as it arrives).
    @Test func aPasswordFileAndUDPTransportRecordByStreamCopy() throws {
        let server = try LoopbackCameraServer.rtsp(user: "viewer", password: "right-secret")
        defer { server.stop() }
        let dir = try TemporaryDirectory()
        defer { dir.remove() }
        let root = dir.path + "/data"
        try "right-secret\n".write(toFile: dir.path + "/porch.pw", atomically: true, encoding: .utf8)
        let file = dir.path + "/vigil.toml"
        try """
            [storage]
            root = "\(root)"

            [cameras.porch]
            url = "rtsp://viewer@127.0.0.1:\(server.port)/cam"
            password_file = "\(dir.path)/porch.pw"
            transport = "udp"

            [[record]]
            camera = "porch"
            segment_seconds = 1
            """.write(toFile: file, atomically: true, encoding: .utf8)
        let check = VigilBinary.run(["check-config", file])
        #expect(check.status == 0, "\(check.errorOutput)")
        #expect(check.output.contains("network camera over UDP") && check.output.contains("stream copy"), "\(check.output)")
        let run = VigilBinary.run(["run", "--config", file, "--duration", "5", "--log-level", "info"])
        #expect(run.status == 0, "\(run.errorOutput)")
        #expect(!(run.output + run.errorOutput).contains("secret"))
        try expectPlayableSegments(root)
    }

    /// check-config connects: a wrong password is an error at the camera's line; a camera that
    /// is off now is a note, and the file is still good.
    @Test func checkConfigSaysAWrongPasswordIsAnErrorAndACameraDownIsANote() throws {
        let server = try LoopbackCameraServer.rtsp(user: "viewer", password: "right-secret")
        defer { server.stop() }
        let dir = try TemporaryDirectory()
        defer { dir.remove() }
        let file = dir.path + "/vigil.toml"
        try configuration(root: dir.path + "/data", url: server.url(user: "viewer", password: "wrong-secret"), lostFile: dir.path + "/lost")
            .write(toFile: file, atomically: true, encoding: .utf8)
        let wrong = VigilBinary.run(["check-config", file])
        #expect(wrong.status == 1)
        #expect(wrong.errorOutput.contains("vigil.toml:10: error: camera porch: rtsp://***@127.0.0.1:\(server.port)/cam: 401"), "\(wrong.errorOutput)")
        #expect(!(wrong.output + wrong.errorOutput).contains("secret"))
        #expect(VigilBinary.run(["check-config", "--no-probe", file]).status == 0, "--no-probe does not connect")

        server.stop()
        let down = VigilBinary.run(["check-config", file])
        #expect(down.status == 0, "\(down.errorOutput)")
        #expect(down.output.contains("camera porch: note: cannot reach rtsp://***@127.0.0.1:\(server.port)/cam: connection refused now"), "\(down.output)")
    }

    /// A network camera added to the file while vigil runs is recorded after the reload.
    @Test func aNetworkCameraAddedByAReloadIsRecorded() async throws {
        let server = try LoopbackCameraServer.rtsp()
        defer { server.stop() }
        let dir = try TemporaryDirectory()
        defer { dir.remove() }
        let root = dir.path + "/data", file = dir.path + "/vigil.toml"
        let synthetic = """
            [storage]
            root = "\(root)"

            \(syntheticCamera("a", device: 0))
            [[record]]
            camera = "a"
            segment_seconds = 1

            """
        try synthetic.write(toFile: file, atomically: true, encoding: .utf8)
        let process = try VigilBinary.start(["run", "--config", file, "--log-level", "notice"], in: dir.path)
        defer { if process.isRunning { process.terminate() } }
        #expect(await waitUntil(seconds: 30) { !RecordingInspector.files(under: root + "/a/video", endingWith: ".mp4").isEmpty })
        try (synthetic + """

            [cameras.porch]
            url = "\(server.url())"

            [[record]]
            camera = "porch"
            segment_seconds = 1

            """).write(toFile: file, atomically: true, encoding: .utf8)
        #expect(await waitUntil(seconds: 30) { RecordingInspector.files(under: root + "/porch/video", endingWith: ".mp4").count >= 2 })
        kill(process.processIdentifier, SIGTERM)
        #expect(await waitForExit(process, seconds: 30))
        #expect(process.terminationStatus == 0)
        try expectPlayableSegments(root)
    }

    /// A camera whose H.264 has B-frames sends packets in decode order, their presentation
    /// times going back and forth: the copy keeps both times, so every segment and an export
    /// across them decode whole.
    @Test func bFramesAreCopiedWithTheirDecodeAndPresentationTimes() throws {
        let server = try LoopbackCameraServer.rtsp(gop: 15, bframes: 2)
        defer { server.stop() }
        let dir = try TemporaryDirectory()
        defer { dir.remove() }
        let root = try record(server, seconds: 6, in: dir)
        try expectPlayableSegments(root)
        let segments = RecordingInspector.files(under: root + "/porch/video", endingWith: ".mp4")
        // The stream really has B-frames: some frame is shown later than it is decoded.
        let first = try #require(segments.first)
        let times = RecordingInspector.run("/usr/bin/ffprobe", ["-v", "error", "-select_streams", "v", "-show_entries", "packet=pts,dts", "-of", "csv=p=0", first])
        let reordered = times.output.split(separator: "\n").contains { line in
            let t = line.split(separator: ",").compactMap { Int($0) }
            return t.count == 2 && t[0] > t[1]
        }
        #expect(reordered, "no packet with pts > dts in \(first): \(times.output.prefix(300))")

        let clip = dir.path + "/all.mp4"
        let export = VigilBinary.run(["export", "--data", root, "--camera", "porch", "--from", "yesterday", "--to", "now", "-o", clip])
        #expect(export.status == 0, "\(export.errorOutput)")
        #expect(RecordingInspector.ffprobeProblem(clip) == nil)
        let frames = RecordingInspector.run("/usr/bin/ffprobe", ["-v", "error", "-count_frames", "-select_streams", "v", "-show_entries", "stream=nb_read_frames", "-of", "csv=p=0", clip])
        #expect((Int(frames.output.trimmingCharacters(in: .whitespacesAndNewlines)) ?? 0) >= 30, "\(frames.output)")
    }

    /// An H.265 camera's recordings export to MP4 (tagged hvc1, as they are recorded), not to
    /// Matroska as if they were MJPEG.
    @Test func anH265CameraExportsToMP4() throws {
        let server = try LoopbackCameraServer.rtsp(codec: "h265")
        defer { server.stop() }
        let dir = try TemporaryDirectory()
        defer { dir.remove() }
        let root = try record(server, seconds: 4, in: dir)
        let mkv = VigilBinary.run(["export", "--data", root, "--camera", "porch", "--from", "yesterday", "--to", "now", "-o", dir.path + "/all.mkv"])
        #expect(mkv.status != 0 && mkv.errorOutput.contains("these recordings are H.265: write them to a .mp4 file"), "\(mkv.errorOutput)")
        let clip = dir.path + "/all.mp4"
        let export = VigilBinary.run(["export", "--data", root, "--camera", "porch", "--from", "yesterday", "--to", "now", "-o", clip])
        #expect(export.status == 0, "\(export.errorOutput)")
        #expect(RecordingInspector.ffprobeProblem(clip) == nil)
        let probe = RecordingInspector.run("/usr/bin/ffprobe", ["-v", "error", "-select_streams", "v", "-show_entries", "stream=codec_name,codec_tag_string", "-of", "csv=p=0", clip])
        #expect(probe.output.trimmingCharacters(in: .whitespacesAndNewlines) == "hevc,hvc1", "\(probe.output)")
    }

    /// A wrong password backs off on the camera's ladder (about 1 s five times, then 5 s, …)
    /// instead of being tried every second in a new session: within 12 s at most 7 attempts
    /// (a session restarted per attempt made 10 or more), one camera_lost, one session_started,
    /// and no camera_found or "camera found" while the camera still refuses. The password put
    /// right in its file is used after a reload (the session, which kept retrying the old
    /// address, is reopened with the new one, as for a changed transport), and the camera is
    /// found once, when its frames flow.
    @Test func aWrongPasswordBacksOffAndTheCameraIsFoundOnlyWhenFramesFlow() async throws {
        let server = try LoopbackCameraServer.rtsp(user: "viewer", password: "right-secret")
        defer { server.stop() }
        let dir = try TemporaryDirectory()
        defer { dir.remove() }
        let root = dir.path + "/data", file = dir.path + "/vigil.toml", secret = dir.path + "/porch.pw"
        try "wrong-secret\n".write(toFile: secret, atomically: true, encoding: .utf8)
        let hookLines = ["camera_lost", "camera_found", "session_started"].map { "\($0) = \"echo x >> \(dir.path)/\($0).txt\"" }
        try passwordFileConfiguration(root: root, port: server.port, passwordFile: secret, hooks: hookLines.joined(separator: "\n"))
            .write(toFile: file, atomically: true, encoding: .utf8)
        let process = try VigilBinary.start(["run", "--config", file, "--log-level", "debug"], in: dir.path)
        defer { if process.isRunning { process.terminate() } }
        func log() -> String { VigilBinary.output(in: dir.path) }
        func hooks(_ name: String) -> Int {
            ((try? String(contentsOfFile: "\(dir.path)/\(name).txt", encoding: .utf8)) ?? "").split(separator: "\n").count
        }
        func attempts() -> Int { log().components(separatedBy: "401 unauthorized (wrong user or password); next attempt in").count - 1 }
        #expect(await waitUntil(seconds: 30) { attempts() >= 1 }, "\(log())")
        try await Task.sleep(nanoseconds: 12_000_000_000)
        let refused = attempts()
        #expect((2...7).contains(refused), "\(refused) attempts in 12 s: \(log())")
        #expect(hooks("camera_lost") == 1 && hooks("session_started") == 1 && hooks("camera_found") == 0,
                "lost \(hooks("camera_lost")), started \(hooks("session_started")), found \(hooks("camera_found"))")
        #expect(!log().contains("camera found"), "\(log())")

        try "right-secret\n".write(toFile: secret, atomically: true, encoding: .utf8)
        kill(process.processIdentifier, SIGHUP)
        #expect(await waitUntil(seconds: 30) { RecordingInspector.files(under: root + "/porch/video", endingWith: ".mp4").count >= 2 }, "\(log())")
        #expect(await waitUntil(seconds: 10) { hooks("camera_found") == 1 }, "\(log())")
        #expect(hooks("camera_lost") == 1)
        kill(process.processIdentifier, SIGTERM)
        #expect(await waitForExit(process, seconds: 30))
        #expect(process.terminationStatus == 0)
        #expect(hooks("camera_found") == 1 && hooks("camera_lost") == 1)
        #expect(!log().contains("secret"))
        try expectPlayableSegments(root)
    }

    @Test func aWrongPasswordIsALostCameraWhoseReasonSays401() throws {
        let server = try LoopbackCameraServer.rtsp(user: "viewer", password: "right-secret")
        defer { server.stop() }
        let dir = try TemporaryDirectory()
        defer { dir.remove() }
        let lost = dir.path + "/lost.txt"
        let file = dir.path + "/vigil.toml"
        try configuration(root: dir.path + "/data", url: server.url(user: "viewer", password: "wrong-secret"), lostFile: lost)
            .write(toFile: file, atomically: true, encoding: .utf8)
        let run = VigilBinary.run(["run", "--config", file, "--duration", "4", "--log-level", "info"])
        #expect(run.status == 0, "\(run.errorOutput)")
        #expect(!(run.output + run.errorOutput).contains("secret"))
        let reasons = (try? String(contentsOfFile: lost, encoding: .utf8)) ?? ""
        #expect(reasons.contains("401") && reasons.contains("rtsp://***@127.0.0.1"), "camera_lost hook saw: \(reasons)")
        #expect(!reasons.contains("secret"))
    }
}
