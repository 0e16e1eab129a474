import CaptureTesting
import Foundation
import Glibc
import Media
import Testing

/// Two synthetic cameras, `a` and `b`, recording 1 s segments at 160x120.
private func configuration(root: String, bFramesPerSecond: Int, bTimelapse: Bool = false) -> String {
    """
    [storage]
    root = "\(root)"

    \(syntheticCamera("a", device: 0))
    \(syntheticCamera("b", device: 1, fps: bFramesPerSecond))
    [[record]]
    camera = "a"
    segment_seconds = 1

    [[record]]
    camera = "b"
    segment_seconds = 1
    """ + (bTimelapse ? "\n\n[[timelapse]]\ncamera = \"b\"\ninterval_seconds = 1\n" : "\n")
}

private func text(_ path: String) -> String { (try? String(contentsOfFile: path, encoding: .utf8)) ?? "" }

@Suite(.timeLimit(.minutes(3))) struct RunCommandTests {
    @Test func withoutAConfigurationItRecordsTheSyntheticCameraAndSaysSo() async throws {
        let dir = try TemporaryDirectory()
        defer { dir.remove() }
        let data = dir.path + "/data"
        let result = VigilBinary.run(["run", "--data", data, "--duration", "3"])
        #expect(result.status == 0, "\(result.errorOutput)")
        #expect(result.output.contains("No configuration file: recording every camera continuously"))
        #expect(result.output.contains("synthetic test camera"))
        let segments = RecordingInspector.files(under: data + "/synthetic-0/video", endingWith: ".mp4")
        #expect(segments.count >= 1)
        for s in segments { #expect(RecordingInspector.ffprobeProblem(s) == nil, "\(s)") }
        #expect(RecordingInspector.files(under: data, endingWith: ".partial").isEmpty)
    }

    @Test func reloadKeepsAnUnchangedCameraRecordingWithoutAGapAndRefusesABadFile() async throws {
        let dir = try TemporaryDirectory()
        defer { dir.remove() }
        let root = dir.path + "/data"
        let file = dir.path + "/vigil.toml"
        try configuration(root: root, bFramesPerSecond: 10).write(toFile: file, atomically: true, encoding: .utf8)
        let process = try VigilBinary.start(["run", "--config", file, "--log-level", "notice"], in: dir.path)
        let stdout = dir.path + "/stdout.txt"
        #expect(await waitUntil(seconds: 30) { RecordingInspector.files(under: root + "/a/video", endingWith: ".mp4").count >= 2 })

        // Camera b changes (frame rate, a new timelapse job); a does not.
        try configuration(root: root, bFramesPerSecond: 5, bTimelapse: true).write(toFile: file, atomically: true, encoding: .utf8)
        kill(process.processIdentifier, SIGHUP)
        #expect(await waitUntil(seconds: 30) { text(stdout).contains("Reloaded") })
        #expect(text(stdout).contains("1 changed, 0 added, 0 removed, 1 unchanged"), "\(text(stdout))")
        #expect(await waitUntil(seconds: 30) { !RecordingInspector.files(under: root + "/b/stills", endingWith: ".jpg").isEmpty })

        // A broken file is refused; recording goes on with the previous configuration.
        try "[cameras.a]\ndevice = \"synthetic-0\"\nfps = \"fast\"\n".write(toFile: file, atomically: true, encoding: .utf8)
        kill(process.processIdentifier, SIGHUP)
        #expect(await waitUntil(seconds: 30) { text(stdout).contains("Reload refused") })
        let before = RecordingInspector.files(under: root + "/a/video", endingWith: ".mp4").count
        #expect(await waitUntil(seconds: 30) { RecordingInspector.files(under: root + "/a/video", endingWith: ".mp4").count >= before + 2 })

        // Camera b leaves the file: it is finalized and closed; a goes on.
        let onlyA = configuration(root: root, bFramesPerSecond: 5).components(separatedBy: "[cameras.b]")[0]
            + "[[record]]\ncamera = \"a\"\nsegment_seconds = 1\n"
        try onlyA.write(toFile: file, atomically: true, encoding: .utf8)
        kill(process.processIdentifier, SIGHUP)
        #expect(await waitUntil(seconds: 30) { text(stdout).contains("0 changed, 0 added, 1 removed, 1 unchanged") }, "\(text(stdout))")
        #expect(await waitUntil(seconds: 10) { RecordingInspector.files(under: root + "/b", endingWith: ".partial").isEmpty })

        kill(process.processIdentifier, SIGTERM)
        #expect(await waitForExit(process, seconds: 30))
        #expect(process.terminationStatus == 0, "\(text(dir.path + "/stderr.txt"))")
        #expect(text(dir.path + "/stderr.txt").contains(":3: error:"), "the refused reload names the line")

        // Camera a: one session from start to stop, so its frame numbers run on without a gap.
        let files = RecordingInspector.files(under: root + "/a/video", endingWith: ".mp4")
        #expect(files.count >= 5)
        let decoded = try files.map { try RecordingInspector.decode($0) }
        let numbers = decoded.flatMap(\.sequences)
        #expect(numbers.allSatisfy { $0 != nil })
        let values = numbers.compactMap { $0 }
        if let i = values.indices.dropLast().first(where: { values[$0 + 1] != values[$0] + 1 }) {
            Issue.record("camera a has a gap: \(values[i]) then \(values[i + 1])")
        }
        for d in decoded { #expect(d.startsWithKeyframe && RecordingInspector.ffprobeProblem(d.path) == nil, "\(d.path)") }
        #expect(RecordingInspector.files(under: root, endingWith: ".partial").isEmpty)
    }

    @Test func sigusr1SavesASnapshotFromEveryCameraWithASnapshotJob() async throws {
        let dir = try TemporaryDirectory()
        defer { dir.remove() }
        let file = dir.path + "/vigil.toml"
        try """
            [storage]
            root = "\(dir.path)/data"
            [cameras.door]
            device = "synthetic-0"
            size = "320x240"
            fps = 10
            [[snapshot]]
            camera = "door"
            """.write(toFile: file, atomically: true, encoding: .utf8)
        // At info level the log says when the camera's session runs: a snapshot asked for before
        // that has no frame to come from, so the signal is sent only then.
        let process = try VigilBinary.start(["run", "--config", file, "--log-level", "info"], in: dir.path)
        let stdout = dir.path + "/stdout.txt"
        #expect(await waitUntil(seconds: 30) { text(stdout).contains("door: snapshots on SIGUSR1") })
        #expect(await waitUntil(seconds: 30) { text(dir.path + "/stderr.txt").contains("door: recording") }, "\(text(dir.path + "/stderr.txt"))")
        kill(process.processIdentifier, SIGUSR1)
        #expect(await waitUntil(seconds: 30) { text(stdout).contains("Snapshot door: ") })
        kill(process.processIdentifier, SIGTERM)
        #expect(await waitForExit(process, seconds: 30))
        let snapshots = RecordingInspector.files(under: dir.path + "/data/door/snapshots", endingWith: ".jpg")
        #expect(snapshots.count == 1)
        for s in snapshots {
            #expect(RecordingInspector.ffprobeProblem(s) == nil)
            let decoded = try RecordingInspector.decode(s)
            #expect(decoded.width == 320 && decoded.sequences.count == 1 && decoded.sequences[0] != nil, "the snapshot is a camera frame")
        }
    }

    @Test func anInvalidConfigurationIsRefusedBeforeAnyCameraIsTouched() throws {
        let dir = try TemporaryDirectory()
        defer { dir.remove() }
        let file = dir.path + "/bad.toml"
        try """
            [storage]
            root = "\(dir.path)/data"

            [cameras.a]
            device = "synthetic-0"
            fps = 10
            sise = "160x120"

            [[record]]
            camera = "b"
            """.write(toFile: file, atomically: true, encoding: .utf8)
        let result = VigilBinary.run(["run", "--config", file, "--duration", "2"])
        #expect(result.status == 1)
        #expect(result.errorOutput.contains("bad.toml:7: error:"), "\(result.errorOutput)")
        #expect(result.errorOutput.contains("bad.toml:10: error:"), "\(result.errorOutput)")
        #expect(result.errorOutput.contains("nothing was started"))
        #expect(!FileManager.default.fileExists(atPath: dir.path + "/data/a"))
    }

    @Test func systemdHearsReadyWatchdogAndStopping() async throws {
        let dir = try TemporaryDirectory()
        defer { dir.remove() }
        let socket = try NotifySocket(directory: dir.path)
        let process = try VigilBinary.start(
            ["run", "--data", dir.path + "/data"], in: dir.path,
            environment: ["NOTIFY_SOCKET": socket.address, "WATCHDOG_USEC": "1000000"])
        var messages: [String] = []
        while messages.count < 3, let m = socket.receive(seconds: 20) { messages.append(m) }
        #expect(messages.first?.hasPrefix("READY=1\nSTATUS=recording 1 camera(s)") == true, "\(messages)")
        #expect(messages.dropFirst().contains("WATCHDOG=1"), "\(messages)")
        kill(process.processIdentifier, SIGTERM)
        var stopping = false
        while !stopping, let m = socket.receive(seconds: 20) { stopping = m == "STOPPING=1" }
        #expect(stopping)
        #expect(await waitForExit(process, seconds: 30))
        #expect(process.terminationStatus == 0)
    }
}
