import CaptureTesting
import Foundation
import Glibc
import Testing

/// Vigil against cameras that misbehave in every way `hostile-rtsp-server.py` knows (issue 24):
/// nothing a camera sends may stop the process, grow its memory without bound or cost another
/// camera a frame, and each misbehaviour is named in the log.
@Suite(.serialized, .timeLimit(.minutes(8))) struct HostileCameraTests {
    static let password = "hostile-secret"

    /// The misbehaviours issue 24 asks for by name: the table must keep them all.
    static let required = [
        "content-length-int64-max", "content-length-negative", "session-timeout-absurd", "framerate-zero", "framerate-denormal",
        "timestamp-step-back", "timestamp-leap-forward", "marker-never", "header-flood", "bad-status-line", "missing-cseq",
        "endless-401", "redirect", "sdp-malformed", "sprop-malformed", "rtp-bad-header", "fu-without-start", "fu-without-end",
        "stap-overrun", "sps-absurd", "timestamp-jumps", "sequence-wrap", "one-byte-a-second", "reset-after-options",
        "reset-after-describe", "reset-after-setup", "reset-after-play", "reset-mid-packet", "good",
    ]

    /// The hostile camera is a real RTSP camera when it behaves: FFmpeg's own client reads its
    /// `good` and `sequence-wrap` streams without a complaint, so what the other behaviours break
    /// is what they mean to break.
    @Test func theHostileCameraKnowsEveryMisbehaviourAndStreamsWhatFFmpegReads() throws {
        let names = Set(HostileCameraServer.behaviours.map(\.name))
        #expect(Set(Self.required).subtracting(names).isEmpty, "missing from the table: \(Set(Self.required).subtracting(names).sorted())")
        let dir = try TemporaryDirectory()
        defer { dir.remove() }
        let server = try HostileCameraServer(log: dir.path + "/sessions.jsonl")
        defer { server.stop() }
        for name in ["good", "sequence-wrap"] {
            let probe = RecordingInspector.run("/usr/bin/ffprobe", [
                "-v", "error", "-rtsp_transport", "tcp", "-read_intervals", "%+2.5", "-count_frames", "-select_streams", "v",
                "-show_entries", "stream=codec_name,width,height,nb_read_frames", "-of", "csv=p=0",
                server.url(behaviour: name, password: Self.password)])
            let fields = probe.output.trimmingCharacters(in: .whitespacesAndNewlines).split(separator: ",")
            #expect(probe.status == 0 && probe.errorOutput.isEmpty, "\(name): \(probe.errorOutput)")
            #expect(fields.prefix(3) == ["h264", "160", "90"] && (Int(fields.last ?? "") ?? 0) >= 20, "\(name): \(probe.output)")
        }
    }

    /// `vigil devices --url` connects to a camera of each behaviour (all at once): it is never
    /// killed, never shows the password, and when the camera cannot be recorded it says why.
    @Test func vigilDevicesOutlivesEveryMisbehaviourAndNamesWhyACameraCannotBeRecorded() async throws {
        let dir = try TemporaryDirectory()
        defer { dir.remove() }
        let server = try HostileCameraServer(log: dir.path + "/sessions.jsonl")
        defer { server.stop() }
        let behaviours = HostileCameraServer.behaviours
        try #require(behaviours.count >= Self.required.count)
        var runs: [(behaviour: HostileBehaviour, process: Process, dir: String)] = []
        for behaviour in behaviours {
            let folder = dir.path + "/" + behaviour.name
            try FileManager.default.createDirectory(atPath: folder, withIntermediateDirectories: true)
            let url = server.url(behaviour: behaviour.name, password: Self.password)
            runs.append((behaviour, try VigilBinary.start(["devices", "--url", url], in: folder), folder))
        }
        for (behaviour, process, folder) in runs {
            let exited = await waitForExit(process, seconds: 120)
            if !exited { process.terminate() }
            let output = contents(folder + "/stdout.txt") + contents(folder + "/stderr.txt")
            let said = lastWords(output)
            #expect(exited, "\(behaviour.name): vigil devices --url still ran after 120 s")
            #expect(!output.contains(Self.password), "\(behaviour.name): the password was shown")
            guard process.terminationReason == .exit else {
                Issue.record("\(behaviour.name) (\(behaviour.what)): vigil devices --url died of signal \(process.terminationStatus): \(said)")
                continue
            }
            switch behaviour.fails {
            case .connect:
                #expect(process.terminationStatus == 1 && behaviour.isNamed(in: withoutAddresses(output)),
                        "\(behaviour.name) (\(behaviour.what)): expected exit 1 and /\(behaviour.expect)/, got \(process.terminationStatus): \(said)")
            case .never:
                #expect(process.terminationStatus == 0 && output.contains("video: h264 160x90"), "\(behaviour.name): \(said)")
            case .stream:
                break
            }
        }
    }

    /// Hostile cameras: enough that their sessions pass `sessionsWanted` well within
    /// `longestRunSeconds` even when each camera's retries back off (1 s ×5, 5 s ×5, then 10 s:
    /// about 20 attempts in three minutes, some of them waiting 10 s for a camera that says nothing).
    static let hostileCameras = 24
    static let sessionsWanted = 300
    static let longestRunSeconds = 180.0
    /// The most memory (VmHWM) `vigil run` may use with the good camera and the hostile ones:
    /// 79 MiB were measured with all of them well-behaved (every hostile camera on
    /// `/behaviour/good`, a minute), so 128 MiB leaves room; each hostile camera may hold one
    /// picture at the client's cap on top (16 MiB, issue 24). A client without a cap takes all
    /// 512 MiB `marker-never` sends, and more while its frame grows.
    static let memoryBoundMiB = 128 + 16 * hostileCameras
    /// Past this the run is stopped at once, to spare the machine.
    static let memoryCeilingMiB = 3072

    /// One `vigil run` records a good camera (gst-rtsp-server) beside `hostileCameras` cameras
    /// of the hostile server, each on its own seeded schedule of every misbehaviour, until
    /// `sessionsWanted` hostile sessions were served: vigil never dies and exits 0 on SIGTERM,
    /// its memory stays under `memoryBoundMiB`, the good camera's recording has no gap and every
    /// file decodes, and every hostile session has a line in the log naming what was wrong.
    @Test func threeHundredHostileSessionsNeitherStopVigilNorCostTheGoodCameraAFrame() async throws {
        var random = SeededRandom.fromEnvironment("VIGIL_HOSTILE_SEED", label: "hostile cameras")
        let firstSeed = Int(random.next() % 1_000_000)
        let dir = try TemporaryDirectory()
        defer { dir.remove() }
        let good = try LoopbackCameraServer.rtsp()
        defer { good.stop() }
        // To look at the others while some still stop vigil; such a run fails all the same.
        let skipped = (ProcessInfo.processInfo.environment["VIGIL_HOSTILE_SKIP"] ?? "").split(separator: ",").map(String.init)
        let hostile = try HostileCameraServer(log: dir.path + "/sessions.jsonl", skip: skipped)
        defer { hostile.stop() }
        let root = dir.path + "/data", file = dir.path + "/vigil.toml"
        var configuration = "[storage]\nroot = \"\(root)\"\n\n[cameras.good]\nurl = \"\(good.url())\"\n\n[[record]]\ncamera = \"good\"\nsegment_seconds = 2\n"
        // A hostile camera's sessions last seconds: one file each (fewer files to probe).
        for i in 0..<Self.hostileCameras {
            configuration += "\n[cameras.h\(i)]\nurl = \"\(hostile.url(seed: firstSeed + i, password: Self.password))\"\n\n[[record]]\ncamera = \"h\(i)\"\nsegment_seconds = 60\n"
        }
        try configuration.write(toFile: file, atomically: true, encoding: .utf8)

        // Debug is the level at which every connection attempt of a camera is logged.
        let process = try VigilBinary.start(["run", "--config", file, "--log-level", "debug"], in: dir.path)
        defer { if process.isRunning { kill(process.processIdentifier, SIGKILL) } }
        let began = Date()
        let reader = VigilLog.Reader(path: dir.path + "/stderr.txt")
        var peakKiB = 0
        var served = 0
        for tick in 0... {
            guard process.isRunning, served < Self.sessionsWanted, Date().timeIntervalSince(began) < Self.longestRunSeconds,
                  peakKiB < Self.memoryCeilingMiB * 1024 else { break }
            reader.read()
            if let memory = memoryKiB(of: process.processIdentifier) { peakKiB = max(peakKiB, memory.peak) }
            if tick % 10 == 0 { served = (try? hostile.sessions().count) ?? served }
            try await Task.sleep(nanoseconds: 100_000_000)
        }
        let diedOnItsOwn = !process.isRunning
        let stopped = Date()
        if let memory = memoryKiB(of: process.processIdentifier) { peakKiB = max(peakKiB, memory.peak) }
        kill(process.processIdentifier, SIGTERM)
        let exited = await waitForExit(process, seconds: 30)
        print("vigil stopped \(String(format: "%.1f", Date().timeIntervalSince(stopped))) s after SIGTERM")
        hostile.stop()
        reader.read()
        let sessions = try hostile.sessions()
        let log = reader.lines.map(\.text).joined(separator: "\n")
        print("hostile cameras: \(sessions.count) sessions in \(Int(stopped.timeIntervalSince(began))) s, peak memory \(peakKiB / 1024) MiB")

        #expect(!diedOnItsOwn, """
            vigil died (\(process.terminationReason == .exit ? "exit" : "signal") \(process.terminationStatus)) \
            \(Int(stopped.timeIntervalSince(began))) s in, after \(sessions.filter { $0.end < stopped.timeIntervalSince1970 - 2 }.count) sessions; \
            sessions open then: \(sessions.filter { $0.end >= stopped.timeIntervalSince1970 - 2 }.map(\.label)); its last words: \(lastWords(log))
            """)
        #expect(exited && process.terminationReason == .exit && process.terminationStatus == 0, "after SIGTERM: \(lastWords(log))")
        #expect(sessions.count >= Self.sessionsWanted, "\(sessions.count) hostile sessions in \(Int(stopped.timeIntervalSince(began))) s")
        #expect(peakKiB <= Self.memoryBoundMiB * 1024, "vigil's peak memory (VmHWM) was \(peakKiB / 1024) MiB, over \(Self.memoryBoundMiB) MiB")
        #expect(!log.contains(Self.password) && !contents(dir.path + "/stdout.txt").contains(Self.password), "the password was logged")
        // FFmpeg speaks through Vigil's logger (whole lines, naming the camera), never with its
        // own "[h264 @ 0x…]" writes glued into Vigil's lines.
        let ffmpeg = reader.lines.filter { $0.text.contains("vigil.ffmpeg:") }
        print("hostile cameras: \(ffmpeg.count) lines of FFmpeg's, \(ffmpeg.filter { $0.text.contains("camera h") }.count) naming their camera")
        #expect(!log.contains(" @ 0x"), "libav wrote past Vigil's logger: \(log.split(separator: "\n").filter { $0.contains(" @ 0x") }.prefix(3))")
        #expect(RecordingInspector.files(under: root, endingWith: ".partial").isEmpty, "segments left unfinished")

        if diedOnItsOwn {
            Issue.record("the good camera's recording is not checked: vigil's death stopped it, and its last segment was never indexed")
        } else {
            try expectGaplessAndPlayable(root: root, camera: "good", from: began, to: stopped)
        }
        try expectHostileSegmentsPlay(root: root, sessions: sessions, firstSeed: firstSeed)
        // Sessions that ended as vigil was being stopped may not have been told of.
        let cut = stopped.timeIntervalSince1970 - 3
        expectEverySessionNamed(sessions.filter { $0.end < cut }, log: VigilLog(reader.lines), firstSeed: firstSeed)
        if !skipped.isEmpty { Issue.record("VIGIL_HOSTILE_SKIP left out \(skipped): this run says nothing of them") }
    }

    /// The good camera recorded from soon after the start to the stop, each segment continuing
    /// the one before by one frame (15 fps: within 100 ms), and every segment decodes.
    private func expectGaplessAndPlayable(root: String, camera: String, from began: Date, to stopped: Date) throws {
        let (segments, _) = try indexedSegments(root, camera: camera)
        try #require(!segments.isEmpty, "camera \(camera) recorded nothing")
        let first = Double(segments.first!.startNanos) / 1e9, last = Double(segments.last!.endNanos) / 1e9
        #expect(first - began.timeIntervalSince1970 < 20, "\(camera) began recording \(Int(first - began.timeIntervalSince1970)) s after the start")
        #expect(stopped.timeIntervalSince1970 - last < 5, "\(camera) stopped recording \(Int(stopped.timeIntervalSince1970 - last)) s before the stop")
        var gaps: [String] = []
        for (a, b) in zip(segments, segments.dropFirst()) {
            let gap = b.startNanos - a.endNanos
            if gap <= 0 || gap >= 100_000_000 { gaps.append("\(gap / 1_000_000) ms before \((b.path as NSString).lastPathComponent)") }
        }
        #expect(gaps.isEmpty, "camera \(camera): \(gaps.count) gaps in \(segments.count) segments: \(gaps.prefix(10))")
        for (s, problem) in zip(segments, RecordingInspector.ffprobeProblems(segments.map(\.path))) {
            #expect(problem == nil, "\(s.path): \(problem ?? "")")
        }
    }

    /// What Vigil wrote of a hostile camera plays too; a file that does not is named with the
    /// behaviours of the sessions it spans.
    private func expectHostileSegmentsPlay(root: String, sessions: [HostileSession], firstSeed: Int) throws {
        let cameras = (0..<Self.hostileCameras).map { "h\($0)" }
        let files = cameras.flatMap { RecordingInspector.files(under: "\(root)/\($0)/video", endingWith: ".mp4") }
        var broken: [String] = []
        var index: [Int: [IndexedSegment]] = [:]
        for (file, problem) in zip(files, RecordingInspector.ffprobeProblems(files, atOnce: 8)) {
            guard let problem, let i = cameras.firstIndex(where: { file.hasPrefix("\(root)/\($0)/") }) else { continue }
            if index[i] == nil { index[i] = try indexedSegments(root, camera: cameras[i]).segments }
            let indexed = index[i]?.first { $0.path == file }
            let during = indexed.map { s in
                sessions.filter {
                    $0.path == "/hostile/\(firstSeed + i)" && Double(s.startNanos) / 1e9 <= $0.end + 1 && Double(s.endNanos) / 1e9 >= $0.start - 1
                }
            } ?? []
            broken.append("\(cameras[i]) \((file as NSString).lastPathComponent) [\(during.map(\.behaviour).joined(separator: ", "))]: \(problem.prefix(160))")
        }
        print("hostile cameras: \(files.count) segments recorded")
        // sps-absurd included: an SPS Vigil cannot read is refused (its size is then 0x0 or absurd),
        // and the 30 KB one is the camera's own SPS with bytes after it, which decoders read.
        #expect(broken.isEmpty, "\(broken.count) of \(files.count) hostile segments do not decode:\n\(broken.prefix(10).joined(separator: "\n"))")
    }

    /// Each hostile session is named in Vigil's log (`VigilLog.unnamed`); prints, for each
    /// behaviour, how many of its sessions were named and what Vigil said of one that was not.
    private func expectEverySessionNamed(_ sessions: [HostileSession], log: VigilLog, firstSeed: Int) {
        let unnamed = log.unnamed(sessions) { session in
            Int(session.path.split(separator: "/").last ?? "").flatMap { seed in
                (firstSeed..<firstSeed + Self.hostileCameras).contains(seed) ? "h\(seed - firstSeed)" : nil
            }
        }
        let total = Dictionary(grouping: sessions, by: \.behaviour).mapValues(\.count)
        let misses = Dictionary(grouping: unnamed, by: \.session.behaviour)
        for name in total.keys.sorted() {
            let example = misses[name]?.first.map { "; e.g. \(Self.describe($0).prefix(300))" } ?? ""
            print("  \(name): \(total[name]! - (misses[name]?.count ?? 0)) of \(total[name]!) sessions named\(example)")
        }
        for (name, missed) in misses.sorted(by: { $0.key < $1.key }) {
            Issue.record("""
                \(name): \(missed.count) of \(total[name]!) sessions have no log line matching /\(missed[0].session.expect)/, e.g.
                \(missed.prefix(2).map(Self.describe).joined(separator: "\n"))
                """)
        }
    }

    private static func describe(_ miss: (session: HostileSession, said: [VigilLog.Line])) -> String {
        let said = miss.said.map(\.message).prefix(3).joined(separator: " | ")
        return "\(miss.session.label), \(miss.session.outcome): Vigil said: \(said.isEmpty ? "nothing" : said)"
    }

    /// The matching itself: a line names a session only if it is the client's, about that
    /// session's camera alone (not one whose path merely starts the same, nor several), falls
    /// within the session (not into the camera's next one), matches its pattern, and named no
    /// other session.
    @Test func aLogLineNamesOnlyOneSessionOfItsOwnCameraWhileItLasts() throws {
        func session(_ path: String, _ behaviour: String, _ expect: String, _ start: Double, _ end: Double) throws -> HostileSession {
            let json = """
                {"path": "\(path)", "session": 0, "behaviour": "\(behaviour)", "variant": "", "fails": "connect", "expect": "\(expect)",
                 "start": \(start), "end": \(end), "sent": 0, "outcome": "the server closed the connection"}
                """
            return try JSONDecoder().decode(HostileSession.self, from: Data(json.utf8))
        }
        let t = 1_800_000_000.0
        let log = VigilLog([
            (t + 1.5, "2027-01-15T08:00:01+0000 debug vigil.network: rtsp://***@127.0.0.1:5/hostile/12: bad Content-Length; next attempt in 1.0 s"),
            (t + 2.5, "2027-01-15T08:00:02+0000 debug vigil.network: rtsp://***@127.0.0.1:5/hostile/1: the SDP has no video; next attempt in 1.0 s"),
            (t + 29.7, "2027-01-15T08:00:29+0000 notice vigil.events: h1: camera lost: rtsp://***@127.0.0.1:5/hostile/1: the RTSP status line is garbage"),
            (t + 30.6, "2027-01-15T08:00:30+0000 debug vigil.network: rtsp://***@127.0.0.1:5/hostile/1: bad Content-Length; next attempt in 1.0 s"),
            (t + 31.2, "2027-01-15T08:00:31+0000 debug vigil.services: cameras rtsp://***@127.0.0.1:5/hostile/1 rtsp://***@127.0.0.1:5/hostile/2 Content-Length"),
            (t + 40.5, "2027-01-15T08:00:40+0000 error vigil.supervisor: camera h1: recording failed (write header of /tmp/h1.mp4.partial)"),
            (t + 50.5, "2027-01-15T08:00:50+0000 debug vigil.network: rtsp://***@127.0.0.1:5/hostile/1: a redirect to rtsp://127.0.0.1:5/hostile/1"),
            (t + 71.5, "2027-01-15T08:01:11+0000 warning vigil.rtsp: rtsp://***@127.0.0.1:5/hostile/1: a session timeout of 0 s"),
            (t + 81.05, "2027-01-15T08:01:21+0000 debug vigil.network: rtsp://***@127.0.0.1:5/hostile/1: bad Content-Length"),
        ])
        let sessions = [
            try session("/hostile/1", "content-length-negative", "Content-Length", t, t + 5),  // only h12's line says so then
            try session("/hostile/1", "sdp-malformed", "SDP", t + 1, t + 3),
            try session("/hostile/1", "bad-status-line", "status", t + 29, t + 29.5),
            try session("/hostile/1", "content-length-int64-max", "Content-Length", t + 30, t + 30.5),
            try session("/hostile/1", "content-length-unparseable", "Content-Length", t + 31, t + 31.5),  // a line of two cameras
            try session("/hostile/1", "header-flood", "header", t + 40, t + 41),  // the recorder's line, not the client's
            try session("/hostile/1", "redirect", "redirect", t + 50, t + 51),  // its camera twice is still one camera
            try session("/hostile/1", "redirect", "redirect|Content-Length", t + 60, t + 61),  // the line is before it
            try session("/hostile/1", "one-byte-a-second", "timed out|timeout", t + 70, t + 70.5),  // the line is the next one's
            try session("/hostile/1", "session-timeout-absurd", "timeout", t + 71, t + 72),
            try session("/hostile/1", "content-length-int64-max", "Content-Length", t + 80, t + 80.2),
            try session("/hostile/1", "content-length-negative", "Content-Length", t + 81, t + 81.2),  // the line is taken
        ]
        let camera: (HostileSession) -> String? = { $0.path == "/hostile/1" ? "h1" : nil }
        let unnamed = log.unnamed(sessions, camera: camera).map(\.session.behaviour)
        #expect(unnamed == [
            "content-length-negative", "content-length-unparseable", "header-flood", "redirect", "one-byte-a-second", "content-length-negative",
        ])
        #expect(log.all.first?.message.hasPrefix("<address> bad Content-Length") == true)
    }
}


/// What a process said last, or why Swift stopped it (a runtime failure and its place).
private func lastWords(_ output: String) -> String {
    let lines = output.split(separator: "\n")
    if let fatal = lines.first(where: { $0.contains("Fatal error") || $0.contains("runtime failure") }) {
        // The first place in Vigil's own code on the thread that crashed.
        let crashed = lines.firstIndex { $0.hasPrefix("Thread ") && $0.hasSuffix(" crashed:") } ?? 0
        let place = lines[crashed...].first { $0.contains(".swift:") && $0.contains(" at /") && !$0.contains("/Swift/") }
        return String(fatal.prefix(300)) + (place.map { " (" + String($0.suffix(160)) + ")" } ?? "")
    }
    return lines.suffix(3).joined(separator: " | ").prefix(600).description
}

/// The resident and peak resident memory of a process (`VmRSS`, `VmHWM`), in KiB.
private func memoryKiB(of pid: Int32) -> (resident: Int, peak: Int)? {
    guard let status = try? String(contentsOfFile: "/proc/\(pid)/status", encoding: .utf8) else { return nil }
    func field(_ name: String) -> Int? {
        status.split(separator: "\n").first { $0.hasPrefix(name + ":") }
            .flatMap { Int($0.split(whereSeparator: { $0 == " " || $0 == "\t" }).dropFirst().first ?? "") }
    }
    guard let resident = field("VmRSS"), let peak = field("VmHWM") else { return nil }
    return (resident, peak)
}
