import CaptureTesting
import Foundation
import Testing

/// SIGTERM stops `vigil run` and `vigil demo` in a sequence that completes: every camera's
/// last segment is finalized, indexed and announced, and the hooks it fires have run, before
/// the process exits. The hook here is slow on purpose (it sleeps a second before it writes):
/// a recorder that exits as soon as its files are closed would leave the last ones unwritten.
@Suite(.timeLimit(.minutes(2))) struct ShutdownTests {
    private static func slowHook(writingTo list: String) -> String { #"sleep 1; echo "$VIGIL_FILE" >> "# + list }

    @Test(arguments: ["demo", "run"])
    func everySegmentsHookHasRunWhenTheRecorderExits(_ command: String) async throws {
        let dir = try TemporaryDirectory()
        defer { dir.remove() }
        let data = dir.path + "/data"
        let list = dir.path + "/hooked.txt"
        let arguments: [String]
        if command == "demo" {
            arguments = ["demo", "--output", data, "--cameras", "2", "--size", "160x120", "--fps", "15", "--segment-seconds", "1",
                         "--hook", "segment_finalized=\(Self.slowHook(writingTo: list))", "--hook-timeout", "20"]
        } else {
            let file = dir.path + "/vigil.toml"
            try """
                [storage]
                root = "\(data)"
                [hooks]
                segment_finalized = '\(Self.slowHook(writingTo: list))'
                timeout_seconds = 20
                [cameras.a]
                device = "synthetic-0"
                size = "160x120"
                fps = 15
                [cameras.b]
                device = "synthetic-1"
                size = "160x120"
                fps = 15
                [[record]]
                camera = "a"
                segment_seconds = 1
                [[record]]
                camera = "b"
                segment_seconds = 1
                """.write(toFile: file, atomically: true, encoding: .utf8)
            arguments = ["run", "--config", file]
        }
        let process = try VigilBinary.start(arguments, in: dir.path)
        #expect(await waitUntil(seconds: 30) { RecordingInspector.files(under: data, endingWith: ".mp4").count >= 4 })
        process.terminate()
        #expect(await waitForExit(process, seconds: 60))
        #expect(process.terminationStatus == 0)
        let segments = Set(RecordingInspector.files(under: data, endingWith: ".mp4"))
        #expect(RecordingInspector.files(under: data, endingWith: ".partial").isEmpty)
        let hooked = ((try? String(contentsOfFile: list, encoding: .utf8)) ?? "").split(separator: "\n").map(String.init)
        #expect(hooked.count == Set(hooked).count, "a segment was announced twice")
        #expect(Set(hooked) == segments, "segments without their hook: \(segments.subtracting(hooked).sorted())")
    }
}
