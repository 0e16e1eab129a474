import Foundation

/// The `vigil` binary built next to the running test bundle or benchmark (`.build/debug` for
/// the tests, `.build/release` for `vigil-bench`), else the debug build of this checkout.
public enum VigilBinary {
    public static var path: String {
        let here = URL(fileURLWithPath: CommandLine.arguments[0]).deletingLastPathComponent()
        for dir in [here, here.deletingLastPathComponent()] {
            let candidate = dir.appendingPathComponent("vigil").path
            if FileManager.default.isExecutableFile(atPath: candidate) { return candidate }
        }
        let root = URL(fileURLWithPath: #filePath).deletingLastPathComponent().deletingLastPathComponent().deletingLastPathComponent()
        return root.appendingPathComponent(".build/debug/vigil").path
    }

    /// Starts `vigil` with arguments; output goes to files so the pipes never fill (`output(in:)`).
    /// `under` is a command that runs it (`["/usr/bin/unshare", "--mount", …]`): vigil's path
    /// and arguments follow it. `binary`: another build of vigil (a benchmark's "before").
    public static func start(
        _ arguments: [String], in dir: String, environment: [String: String] = [:], under wrapper: [String] = [], binary: String? = nil
    ) throws -> Process {
        let path = binary ?? path
        let process = Process()
        process.executableURL = URL(fileURLWithPath: wrapper.first ?? path)
        process.arguments = wrapper.isEmpty ? arguments : wrapper.dropFirst() + [path] + arguments
        if !environment.isEmpty {
            process.environment = ProcessInfo.processInfo.environment.merging(environment) { _, new in new }
        }
        _ = FileManager.default.createFile(atPath: dir + "/stdout.txt", contents: nil)
        _ = FileManager.default.createFile(atPath: dir + "/stderr.txt", contents: nil)
        process.standardOutput = FileHandle(forWritingAtPath: dir + "/stdout.txt")
        process.standardError = FileHandle(forWritingAtPath: dir + "/stderr.txt")
        try process.run()
        return process
    }

    public static func run(_ arguments: [String]) -> (status: Int32, output: String, errorOutput: String) {
        RecordingInspector.run(path, arguments)
    }

    /// What a `vigil` started in `dir` wrote so far: standard error, then standard output.
    public static func output(in dir: String) -> String {
        ((try? String(contentsOfFile: dir + "/stderr.txt", encoding: .utf8)) ?? "") + ((try? String(contentsOfFile: dir + "/stdout.txt", encoding: .utf8)) ?? "")
    }
}
