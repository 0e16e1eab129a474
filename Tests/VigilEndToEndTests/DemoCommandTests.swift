import CaptureTesting
import Foundation
import Media
import Testing

func waitForExit(_ process: Process, seconds: Double) async -> Bool {
    await waitUntil(seconds: seconds) { !process.isRunning }
}

@Suite(.timeLimit(.minutes(3))) struct DemoCommandTests {
    @Test func demoRecordsPlayableSegmentsAndStillsAndExitsCleanly() async throws {
        let dir = try TemporaryDirectory()
        defer { dir.remove() }
        let out = dir.path + "/rec"
        // --duration counts from the start of the services, before the cameras open: 5 s leaves
        // three 1 s slots of frames or more when a busy machine takes a second or two to open them.
        let result = VigilBinary.run([
            "demo", "--output", out, "--duration", "5", "--cameras", "2", "--size", "160x120", "--fps", "15",
            "--segment-seconds", "1", "--timelapse-interval", "1",
        ])
        #expect(result.status == 0, "\(result.errorOutput)")
        #expect(result.output.contains("Recording 2 synthetic camera(s) at 160x120"))
        #expect(result.output.contains("synthetic-1: "))
        #expect(RecordingInspector.files(under: out, endingWith: ".partial").isEmpty)
        for camera in ["synthetic-0", "synthetic-1"] {
            let segments = RecordingInspector.files(under: "\(out)/\(camera)/video", endingWith: ".mp4")
            #expect(segments.count >= 3)
            for s in segments { #expect(RecordingInspector.ffprobeProblem(s) == nil, "\(s)") }
            let stills = RecordingInspector.files(under: "\(out)/\(camera)/stills", endingWith: ".jpg")
            #expect(stills.count >= 2)
            for s in stills { #expect(RecordingInspector.ffprobeProblem(s) == nil, "\(s)") }
        }
    }

    /// Frames that reached no file are not called recorded (the summary said "374 frames, 0
    /// dropped" of a camera whose every file was refused): it counts frames written to files,
    /// and the writes that failed.
    @Test func framesThatReachedNoFileAreNotCalledRecorded() throws {
        let dir = try TemporaryDirectory()
        defer { dir.remove() }
        let out = dir.path + "/rec"
        try FileManager.default.createDirectory(atPath: out, withIntermediateDirectories: true)
        // The camera's folder is a file: no segment of it can be started.
        #expect(FileManager.default.createFile(atPath: out + "/synthetic-0", contents: Data("not a folder".utf8)))
        let result = VigilBinary.run(["demo", "--output", out, "--duration", "2.5", "--size", "160x120", "--fps", "15", "--segment-seconds", "1"])
        let summary = result.output.split(separator: "\n").first { $0.hasPrefix("synthetic-0: ") }.map(String.init) ?? ""
        #expect(summary.contains(", 0 written to files (") && summary.range(of: #"\([1-9][0-9]* write\(s\) failed: see the log\)"#, options: .regularExpression) != nil,
                "\(result.output)\(result.errorOutput)")

        let good = VigilBinary.run(["demo", "--output", dir.path + "/good", "--duration", "2.5", "--size", "160x120", "--fps", "15", "--segment-seconds", "1"])
        let line = good.output.split(separator: "\n").first { $0.hasPrefix("synthetic-0: ") }.map(String.init) ?? ""
        #expect(line.range(of: #"^synthetic-0: [1-9][0-9]* frames, [1-9][0-9]* written to files, "#, options: .regularExpression) != nil, "\(good.output)")
    }

    @Test func sigtermFinalizesTheOpenSegmentAndExitsZero() async throws {
        let dir = try TemporaryDirectory()
        defer { dir.remove() }
        let out = dir.path + "/rec"
        let process = try VigilBinary.start(["demo", "--output", out, "--size", "160x120", "--fps", "15"], in: dir.path)
        #expect(await waitUntil(seconds: 20) {
            RecordingInspector.files(under: out, endingWith: ".partial").contains {
                ((try? FragmentedMP4.layout(of: $0))?.completeFragments ?? 0) >= 2
            }
        })
        process.terminate()
        #expect(await waitForExit(process, seconds: 20))
        #expect(process.terminationStatus == 0)
        #expect(RecordingInspector.files(under: out, endingWith: ".partial").isEmpty)
        // One segment, or two if a minute boundary fell inside the run.
        let segments = RecordingInspector.files(under: out, endingWith: ".mp4")
        #expect(segments.count == 1 || segments.count == 2)
        let decoded = try segments.map { try RecordingInspector.decode($0) }
        for d in decoded {
            #expect(RecordingInspector.ffprobeProblem(d.path) == nil)
            #expect(d.startsWithKeyframe)
        }
        let seqs = decoded.flatMap(\.sequences).compactMap { $0 }
        #expect(seqs.count == decoded.flatMap(\.sequences).count)
        #expect(seqs == Array(0..<UInt32(seqs.count)), "every frame from the first to the last, once")
    }

    @Test func killDashNineLeavesAPartialThatDecodesUpToItsLastFragment() async throws {
        let dir = try TemporaryDirectory()
        defer { dir.remove() }
        let out = dir.path + "/rec"
        let process = try VigilBinary.start(["demo", "--output", out, "--size", "160x120", "--fps", "15"], in: dir.path)
        var partial: String?
        #expect(await waitUntil(seconds: 20) {
            partial = RecordingInspector.files(under: out, endingWith: ".partial").first {
                ((try? FragmentedMP4.layout(of: $0))?.completeFragments ?? 0) >= 4
            }
            return partial != nil
        })
        kill(process.processIdentifier, SIGKILL)
        process.waitUntilExit()
        let file = try #require(partial)
        let layout = try FragmentedMP4.layout(of: file)
        #expect(layout.completeFragments >= 4)
        // Every frame up to the last complete fragment decodes, in order, from the first.
        let decoded = try RecordingInspector.decode(file)
        #expect(decoded.startsWithKeyframe)
        let seqs = decoded.sequences.compactMap { $0 }
        #expect(seqs.count == decoded.sequences.count)
        // From the segment's first frame (0, or later if a minute boundary fell inside the run).
        let first = seqs.first ?? 0
        #expect(seqs == Array(first..<first + UInt32(seqs.count)))
        // Trimmed to its complete fragments, the file passes ffprobe without a complaint and
        // still holds those frames: what the kill cost is the open fragment (≤ 0.5 s of video).
        let copy = dir.path + "/trimmed.mp4"
        try FileManager.default.copyItem(atPath: file, toPath: copy)
        try FragmentedMP4.trimToCompleteFragments(copy)
        #expect(RecordingInspector.ffprobeProblem(copy) == nil)
        let trimmed = try RecordingInspector.decode(copy).sequences.compactMap { $0 }
        #expect(trimmed.count >= seqs.count - 8 && trimmed == Array(seqs.prefix(trimmed.count)))
    }

    @Test(arguments: [
        (["--size", "123x45"], "vigil: camera synthetic-0 does not support 123x45 yuyv422; it offers 160x120, 320x240"),
        (["--fps", "500"], "cannot deliver 500 fps at 640x480 yuyv422; choose 1–60 fps"),
        (["--output", "/proc/vigil-cannot-write-here"], "cannot write recordings to /proc/vigil-cannot-write-here"),
        (["--stream-copy"], "add --pixel-format mjpeg"),
        (["--size", "big"], "The value 'big' is invalid for '--size <size>'"),
        (["--hook", "camera_gone=true"], "unknown hook event \"camera_gone\"; events are camera_lost"),
        (["--device", "/dev/video9"], "vigil: no camera matches \"/dev/video9\""),
    ])
    func badInputGetsAOneLineErrorWithAFix(arguments: [String], message: String) throws {
        let dir = try TemporaryDirectory()
        defer { dir.remove() }
        var args = ["demo", "--duration", "1"]
        if !arguments.contains("--output") { args += ["--output", dir.path + "/rec"] }
        let result = VigilBinary.run(args + arguments)
        #expect(result.status != 0)
        // The first line says what is wrong and what to do (argument errors add a usage line).
        let firstLine = result.errorOutput.split(separator: "\n").first.map(String.init) ?? ""
        #expect(firstLine.contains(message), "stderr was: \(result.errorOutput)")
    }

    @Test func devicesOnAMachineWithoutCamerasIsFriendly() throws {
        let dir = try TemporaryDirectory()
        defer { dir.remove() }
        let text = VigilBinary.run(["devices", "--device-directory", dir.path])
        #expect(text.status == 0)
        #expect(text.output.hasPrefix("No cameras found."))
        let json = VigilBinary.run(["devices", "--json", "--device-directory", dir.path])
        #expect(json.status == 0)
        let parsed = try JSONSerialization.jsonObject(with: Data(json.output.utf8)) as? [String: Any]
        #expect((parsed?["cameras"] as? [Any])?.isEmpty == true)
    }

    @Test func helpDescribesTheDemo() {
        let result = VigilBinary.run(["demo", "--help"])
        #expect(result.status == 0)
        for option in ["--output", "--duration", "--cameras", "--device", "--size", "--fps", "--segment-seconds", "--timelapse-interval",
                       "--chaos", "--watchdog-seconds", "--hook"] {
            #expect(result.output.contains(option))
        }
    }
}
