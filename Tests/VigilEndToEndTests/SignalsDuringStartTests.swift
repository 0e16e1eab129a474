import CaptureTesting
import Foundation
import Glibc
import Testing

/// Signals are trapped before anything else: `vigil run` says at start that SIGHUP reloads, and a
/// SIGHUP sent as soon as it says so (while recovery still reads the files on disk) must reload
/// once start-up is done. It used to kill Vigil: the handler came after recovery.
@Suite(.timeLimit(.minutes(2))) struct SignalsDuringStartTests {
    @Test func aSighupDuringRecoveryReloadsOnceStartIsDone() async throws {
        let dir = try TemporaryDirectory()
        defer { dir.remove() }
        let data = dir.path + "/data"
        // Many unindexed segments, so that start-up recovery reads their packets for a while
        // (with 400, about a second: a loaded machine once looked only after it had ended).
        let day = data + "/a/video/2026-11-22"
        try FileManager.default.createDirectory(atPath: day, withIntermediateDirectories: true)
        let sample = dir.path + "/sample.mp4"
        let made = RecordingInspector.run("/usr/bin/ffmpeg", [
            "-v", "error", "-f", "lavfi", "-i", "testsrc=size=160x120:rate=15", "-t", "20", "-c:v", "libx264", "-preset", "ultrafast", sample,
        ])
        try #require(made.status == 0, "\(made.errorOutput)")
        for n in 0..<1200 {
            try FileManager.default.copyItem(atPath: sample, toPath: day + String(format: "/a-20261122T%02d%02d00Z.mp4", n / 60, n % 60))
        }
        let file = dir.path + "/vigil.toml"
        try """
            [storage]
            root = "\(data)"

            \(syntheticCamera("a", device: 0))
            [[record]]
            camera = "a"
            segment_seconds = 1
            """.write(toFile: file, atomically: true, encoding: .utf8)
        let process = try VigilBinary.start(["run", "--config", file], in: dir.path)
        defer { if process.isRunning { process.terminate() } }
        let stdout = dir.path + "/stdout.txt"
        func said() -> String { (try? String(contentsOfFile: stdout, encoding: .utf8)) ?? "" }
        // The window is recovery's, a few seconds: looked at every 20 ms.
        #expect(await waitUntil(seconds: 30) { said().contains("SIGHUP reloads the configuration") }, "\(said())")
        kill(process.processIdentifier, SIGHUP)
        #expect(!said().contains("Recordings index"), "recovery was over before the signal came: the test needs more files to read")
        #expect(await waitUntil(seconds: 60) { said().contains("Reloaded") || !process.isRunning }, "\(said())")
        #expect(process.isRunning, "SIGHUP during start-up stopped vigil (status \(process.isRunning ? 0 : process.terminationStatus))")
        #expect(said().components(separatedBy: "Reloaded").count == 2, "one SIGHUP, one reload: \(said())")
        #expect(said().contains("adopted 1200 unknown file(s)"), "\(said())")
        process.terminate()
        #expect(await waitForExit(process, seconds: 30))
        #expect(process.terminationStatus == 0)
    }
}
