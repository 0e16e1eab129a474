import Foundation
import Glibc

/// `Servers/s3-fault-proxy.py` in front of an S3 server (moto): passes requests through, or
/// fails, delays, slows, drops them, or goes down, as a test says; and counts what it saw. The
/// archive's tests point Vigil at it to meet every fault of a real bucket.
public final class S3FaultProxy: Sendable {
    private let server: PythonTestServer
    public let port: Int
    public let controlPort: Int

    public init(upstreamPort: Int) throws {
        server = try PythonTestServer("s3-fault-proxy.py", ["--upstream", "127.0.0.1:\(upstreamPort)"])
        let words = server.firstLine.split(separator: " ")
        guard words.count == 4, words[0] == "PORT", let port = Int(words[1]), words[2] == "CONTROL", let control = Int(words[3]) else {
            server.stop()
            throw LoopbackCameraServerError(message: "the S3 proxy did not start: \(server.firstLine)")
        }
        self.port = port
        controlPort = control
    }

    public var endpointURL: String { "http://127.0.0.1:\(port)" }

    /// Sends a control command (`{"down":true}`, `{"fail":3,"status":500}` …).
    public func set(_ json: String) async throws {
        let result = await Self.curl(["-sS", "-X", "POST", "-H", "Content-Type: application/json", "--data", json, "http://127.0.0.1:\(controlPort)/"])
        guard result.status == 0, result.output.contains("\"ok\": true") || result.output.contains("\"ok\":true") else {
            throw LoopbackCameraServerError(message: "the S3 proxy refused \(json): \(result.output) \(result.errorOutput)")
        }
    }

    /// Requests seen: how many of each operation (`upload_part`, `put_object` …) got `status` (nil: any; 0: no answer).
    public func count(_ operation: String, status: Int? = nil) async throws -> Int {
        let result = await Self.curl(["-sS", "http://127.0.0.1:\(controlPort)/stats"])
        guard result.status == 0, let rows = try JSONSerialization.jsonObject(with: Data(result.output.utf8)) as? [[String: Any]] else {
            throw LoopbackCameraServerError(message: "the S3 proxy's stats could not be read: \(result.output)")
        }
        return rows.filter { ($0["op"] as? String) == operation && (status == nil || ($0["status"] as? Int) == status) }
            .reduce(0) { $0 + (($1["count"] as? Int) ?? 0) }
    }

    /// Every request seen, of any operation.
    public func total() async throws -> Int {
        let result = await Self.curl(["-sS", "http://127.0.0.1:\(controlPort)/stats"])
        let rows = try JSONSerialization.jsonObject(with: Data(result.output.utf8)) as? [[String: Any]] ?? []
        return rows.reduce(0) { $0 + (($1["count"] as? Int) ?? 0) }
    }

    public func stop() { server.stop() }

    private static func curl(_ arguments: [String]) async -> (status: Int32, output: String, errorOutput: String) {
        await withCheckedContinuation { continuation in
            Thread.detachNewThread { continuation.resume(returning: RecordingInspector.run("/usr/bin/curl", arguments)) }
        }
    }
}

/// A Python test server under `Servers/`, run by /usr/bin/python3, whose first line of output
/// says where it listens; killed on `stop()` and when it goes away.
final class PythonTestServer: Sendable {
    private let process = Process()
    let firstLine: String

    init(_ script: String, _ arguments: [String]) throws {
        process.executableURL = URL(fileURLWithPath: "/usr/bin/python3")
        process.arguments = ["\(LoopbackCameraServer.directory)/\(script)"] + arguments
        let out = Pipe()
        process.standardOutput = out
        process.standardError = FileHandle.nullDevice
        try process.run()
        var line = Data()
        while !line.contains(UInt8(ascii: "\n")) {
            let chunk = out.fileHandleForReading.availableData
            if chunk.isEmpty { break }
            line.append(chunk)
        }
        firstLine = String(decoding: line, as: UTF8.self).trimmingCharacters(in: .whitespacesAndNewlines)
    }

    func signal(_ number: Int32) { kill(process.processIdentifier, number) }

    /// Killed (woken first, in case a test stopped it with SIGSTOP).
    func stop() {
        guard process.isRunning else { return }
        kill(process.processIdentifier, SIGCONT)
        kill(process.processIdentifier, SIGKILL)
        process.waitUntilExit()
    }

    deinit { stop() }
}
