import CaptureTesting
import Foundation
import Glibc
import Recorder
import Testing

/// Reloads delivered twice (the file saved with `mv`, so the watcher sees it, and SIGHUP sent
/// at once, as a deploy script does), cameras added and removed, and one camera's segment
/// length cycled: every camera keeps one writer. Before, the third camera was written by two
/// writers at once (files on the old grid went on beside the new ones, frames in two files,
/// one name written twice), `vigil verify` failed, and the exit summary counted the frames of
/// the outputs of the start alone.
@Suite(.timeLimit(.minutes(4))) struct ReloadStormTests {
    private func configuration(root: String, cycleSeconds: Int, withB: Bool) -> String {
        var text = """
            [storage]
            root = "\(root)"

            \(syntheticCamera("a", device: 0))
            [[record]]
            camera = "a"
            segment_seconds = 10

            \(syntheticCamera("c", device: 2))
            [[record]]
            camera = "c"
            segment_seconds = \(cycleSeconds)

            """
        if withB {
            text += """

                \(syntheticCamera("b", device: 1))
                [[record]]
                camera = "b"
                segment_seconds = 10

                """
        }
        return text
    }

    /// Written beside the file, then renamed over it (one inotify event), and SIGHUP at once.
    private func save(_ text: String, to file: String, signalling pid: Int32) throws {
        try text.write(toFile: file + ".new", atomically: false, encoding: .utf8)
        #expect(rename(file + ".new", file) == 0)
        kill(pid, SIGHUP)
    }

    @Test func reloadsDeliveredTwiceLeaveOneWriterPerCamera() async throws {
        let dir = try TemporaryDirectory("vigil-reload-storm")
        defer { dir.remove() }
        let root = dir.path + "/data", file = dir.path + "/vigil.toml", stdout = dir.path + "/stdout.txt"
        let cycle = [10, 20, 15]
        try configuration(root: root, cycleSeconds: 10, withB: true).write(toFile: file, atomically: true, encoding: .utf8)
        let process = try VigilBinary.start(["run", "--config", file, "--log-level", "notice"], in: dir.path)
        defer { if process.isRunning { process.terminate() } }
        #expect(await waitUntil(seconds: 60) { contents(stdout).contains("SIGHUP reloads") })
        func reloads() -> Int { contents(stdout).components(separatedBy: "Reloaded \(file)").count - 1 }
        for change in 1...8 {
            let before = reloads()
            try save(configuration(root: root, cycleSeconds: cycle[change % 3], withB: change % 2 == 0), to: file, signalling: process.processIdentifier)
            #expect(await waitUntil(seconds: 30) { reloads() > before }, "change \(change): \(contents(stdout).suffix(600))")
            // Long enough for segments to open on each grid between changes.
            try await Task.sleep(nanoseconds: 1_500_000_000)
        }
        // The same file saved again: nothing changes, nothing is cut.
        let unchanged = configuration(root: root, cycleSeconds: cycle[8 % 3], withB: true)
        let before = reloads()
        try save(unchanged, to: file, signalling: process.processIdentifier)
        #expect(await waitUntil(seconds: 30) { reloads() > before })
        try await Task.sleep(nanoseconds: 1_000_000_000)
        let lastReload = contents(stdout).components(separatedBy: "\n").last { $0.contains("Reloaded \(file)") } ?? ""
        #expect(lastReload.contains(": 0 changed, 0 added, 0 removed, 3 unchanged"), "\(lastReload)")
        kill(process.processIdentifier, SIGTERM)
        #expect(await waitForExit(process, seconds: 60))
        #expect(process.terminationStatus == 0, "\(contents(dir.path + "/stderr.txt").suffix(2000))")

        // Camera c's session was never reopened: its painted numbers run on from 0, each in
        // exactly one file, and its files never overlap in time.
        let index = try RecordingIndex(root: root)
        let segments = try index.entries(kind: .segment).filter { $0.camera == "c" }.sorted { $0.startNanos < $1.startNanos }
        for (earlier, later) in zip(segments, segments.dropFirst()) {
            #expect(later.startNanos > earlier.endNanos, "\(earlier.path) and \(later.path) overlap")
        }
        #expect(segments.map(\.path) == segments.map(\.path).sorted(), "file names go back in time")
        var seen: [UInt32: String] = [:], repeated: [String] = []
        for segment in segments {
            for case let number? in try RecordingInspector.decode(root + "/" + segment.path).sequences {
                if let other = seen[number] { repeated.append("\(number) in \(other) and \(segment.path)") }
                seen[number] = segment.path
            }
        }
        #expect(repeated.isEmpty, "\(repeated.prefix(5))")
        // The summary counts what reached files across every output a reload put in place, and
        // a frame missing from the files is one it counts as dropped (a queue that was full).
        let summary = contents(stdout).components(separatedBy: "\n").first { $0.hasPrefix("c: ") } ?? ""
        let numbers = seen.keys.sorted()
        #expect(summary.contains(", \(numbers.count) written to files"), "\(summary)")
        let dropped = summary.split(separator: ",").first { $0.hasSuffix(" dropped") }.flatMap { Int($0.split(separator: " ").first ?? "") }
        #expect(numbers.first == 0 && numbers.count + (dropped ?? -1) == Int(numbers.last! + 1),
                "\(numbers.count) of frames 0…\(numbers.last ?? 0) in files: \(summary)")
        let verify = VigilBinary.run(["verify", "--data", root, "--deep"])
        #expect(verify.status == 0, "\(verify.output)\(verify.errorOutput)")
    }
}
