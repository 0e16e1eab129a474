import Foundation

/// Runs curl off Swift's cooperative pool; the body goes to `output`. Returns curl's exit
/// status and what `--write-out` printed.
func curl(_ arguments: [String], output: String) async throws -> (status: Int32, written: String) {
    let process = Process()
    process.executableURL = URL(fileURLWithPath: "/usr/bin/curl")
    process.arguments = ["-s", "-o", output] + arguments
    let out = Pipe()
    process.standardOutput = out
    return try await withCheckedThrowingContinuation { c in
        process.terminationHandler = { p in
            let written = String(decoding: out.fileHandleForReading.readDataToEndOfFile(), as: UTF8.self)
            c.resume(returning: (p.terminationStatus, written))
        }
        do { try process.run() } catch { c.resume(throwing: error) }
    }
}

