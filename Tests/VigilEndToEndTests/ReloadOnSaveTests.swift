import CaptureTesting
import Foundation
import Glibc
import Testing


/// `vigil run --config F` notices that F was saved and reloads it by itself, no SIGHUP needed.
@Suite(.timeLimit(.minutes(3))) struct ReloadOnSaveTests {
    private func configuration(root: String, aSegmentSeconds: Int, withB: Bool) -> String {
        var text = """
            [storage]
            root = "\(root)"

            \(syntheticCamera("a", device: 0))
            [[record]]
            camera = "a"
            segment_seconds = \(aSegmentSeconds)

            \(syntheticCamera("b", device: 1))
            """
        if withB {
            text += """

                [[record]]
                camera = "b"
                segment_seconds = 1

                """
        }
        return text
    }

    /// Camera b is in the file from the start (synthetic cameras exist for the ones the file
    /// names when vigil starts) but gets its record job only when the file is saved again.
    @Test func savingTheFileStartsAJobAndChangesASegmentLength() async throws {
        let dir = try TemporaryDirectory()
        defer { dir.remove() }
        let root = dir.path + "/data"
        let file = dir.path + "/vigil.toml"
        try configuration(root: root, aSegmentSeconds: 1, withB: false).write(toFile: file, atomically: true, encoding: .utf8)
        let process = try VigilBinary.start(["run", "--config", file, "--log-level", "notice"], in: dir.path)
        defer { if process.isRunning { process.terminate() } }
        let stdout = dir.path + "/stdout.txt"
        func aSegments() -> [String] { RecordingInspector.files(under: root + "/a/video", endingWith: ".mp4") }
        #expect(await waitUntil(seconds: 30) { aSegments().count >= 2 })
        #expect(RecordingInspector.files(under: root + "/b", endingWith: ".mp4").isEmpty)

        // Saved, not signalled: camera a gets 2 s segments, camera b a record job.
        try configuration(root: root, aSegmentSeconds: 2, withB: true).write(toFile: file, atomically: true, encoding: .utf8)
        #expect(await waitUntil(seconds: 30) { contents(stdout).contains("Reloaded \(file) (\(file) changed): ") }, "\(contents(stdout))")
        let beforeReload = Set(aSegments())
        // Camera b records; camera a finishes two segments under the new length.
        #expect(await waitUntil(seconds: 30) { RecordingInspector.files(under: root + "/b/video", endingWith: ".mp4").count >= 1 })
        #expect(await waitUntil(seconds: 30) { Set(aSegments()).subtracting(beforeReload).count >= 3 })
        kill(process.processIdentifier, SIGTERM)
        #expect(await waitForExit(process, seconds: 30))
        #expect(process.terminationStatus == 0, "\(contents(dir.path + "/stderr.txt"))")
        #expect(!contents(dir.path + "/stderr.txt").contains("SIGHUP"))

        let all = RecordingInspector.files(under: root, endingWith: ".mp4")
        for path in all { #expect(RecordingInspector.ffprobeProblem(path) == nil, "\(path)") }
        #expect(RecordingInspector.files(under: root, endingWith: ".partial").isEmpty)
        // At 10 fps a 1 s segment holds at most 11 frames; a whole 2 s one about 20. The first
        // segment after the reload may start mid-way and the last is cut by the stop: the one
        // between them is whole.
        let before = try beforeReload.sorted().map { try RecordingInspector.decode($0) }
        #expect(before.allSatisfy { $0.sequences.count <= 11 }, "\(before.map(\.sequences.count))")
        let after = try Set(aSegments()).subtracting(beforeReload).sorted().map { try RecordingInspector.decode($0) }
        #expect(after.count >= 3)
        if after.count >= 3 {
            #expect(after[1].sequences.count >= 15, "a whole segment after the reload has \(after[1].sequences.count) frames")
        }
        for d in before + after { #expect(d.sequences.allSatisfy { $0 != nil }, "\(d.path)") }
    }

    /// A synthetic camera the file did not name at start (`synthetic-2`, beyond those made
    /// then) is made and recorded when the file is saved naming it.
    @Test func aSyntheticCameraNamedOnlyAfterStartIsRecorded() async throws {
        let dir = try TemporaryDirectory()
        defer { dir.remove() }
        let root = dir.path + "/data"
        let file = dir.path + "/vigil.toml"
        let first = configuration(root: root, aSegmentSeconds: 1, withB: false)
        try first.write(toFile: file, atomically: true, encoding: .utf8)
        let process = try VigilBinary.start(["run", "--config", file, "--log-level", "notice"], in: dir.path)
        defer { if process.isRunning { process.terminate() } }
        #expect(await waitUntil(seconds: 30) { !RecordingInspector.files(under: root + "/a/video", endingWith: ".mp4").isEmpty })
        try (first + """

            \(syntheticCamera("c", device: 2))
            [[record]]
            camera = "c"
            segment_seconds = 1

            """).write(toFile: file, atomically: true, encoding: .utf8)
        #expect(await waitUntil(seconds: 30) { RecordingInspector.files(under: root + "/c/video", endingWith: ".mp4").count >= 2 },
                "\(contents(dir.path + "/stdout.txt"))\(contents(dir.path + "/stderr.txt"))")
        kill(process.processIdentifier, SIGTERM)
        #expect(await waitForExit(process, seconds: 30))
        #expect(process.terminationStatus == 0)
        for path in RecordingInspector.files(under: root + "/c", endingWith: ".mp4") {
            #expect(RecordingInspector.ffprobeProblem(path) == nil, "\(path)")
        }
    }
}
