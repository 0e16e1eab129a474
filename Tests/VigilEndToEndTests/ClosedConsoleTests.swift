import CaptureTesting
import Foundation
import Testing

/// A recorder whose standard output goes nowhere (`vigil demo | head -c 1`, an ssh session that
/// dropped, a pager that quit) keeps recording: the first failed write is logged and the rest of
/// the output is dropped. Before, SIGPIPE (or Foundation's trap on EPIPE) killed it.
@Suite(.timeLimit(.minutes(2))) struct ClosedConsoleTests {
    @Test(arguments: [
        ["demo", "--duration", "3", "--size", "160x120", "--fps", "15", "--segment-seconds", "1", "--output"],
        ["run", "--duration", "3", "--data"],
    ])
    func aClosedStandardOutputNeverStopsRecording(_ arguments: [String]) async throws {
        let dir = try TemporaryDirectory()
        defer { dir.remove() }
        let out = dir.path + "/rec"
        let pipe = Pipe()
        // Nobody will ever read: the first write to standard output fails with EPIPE.
        try pipe.fileHandleForReading.close()
        let process = Process()
        process.executableURL = URL(fileURLWithPath: VigilBinary.path)
        process.arguments = arguments + [out]
        process.standardOutput = pipe.fileHandleForWriting
        _ = FileManager.default.createFile(atPath: dir.path + "/stderr.txt", contents: nil)
        process.standardError = FileHandle(forWritingAtPath: dir.path + "/stderr.txt")
        try process.run()
        try pipe.fileHandleForWriting.close()
        #expect(await waitForExit(process, seconds: 60))
        let errors = try String(contentsOfFile: dir.path + "/stderr.txt", encoding: .utf8)
        #expect(process.terminationReason == .exit && process.terminationStatus == 0, "\(process.terminationReason.rawValue) \(process.terminationStatus): \(errors)")
        #expect(errors.contains("standard output cannot be written (Broken pipe)"), "\(errors)")
        #expect(RecordingInspector.files(under: out, endingWith: ".partial").isEmpty)
        let segments = RecordingInspector.files(under: out, endingWith: ".mp4")
        #expect(!segments.isEmpty)
        for segment in segments { #expect(RecordingInspector.ffprobeProblem(segment) == nil, "\(segment)") }
    }
}
