import S3
import Foundation
import Glibc
import Synchronization

/// A real S3 server for the archive's tests: moto (PyPI `moto[server]`, in the virtual environment
/// `Scripts/setup --tests` makes) on a free loopback port, with one bucket. Started through
/// Servers/moto-server.py, which makes moto check signatures against the URL as sent (stock moto
/// rejects correctly signed keys and prefixes holding `/`, `+`, `$` … once auth is on). Auth is off until
/// `enableAuthentication()`; moto is killed on `stop()` and when the server goes away.
public final class S3TestServer: Sendable {
    private let process: Process
    public let port: Int
    public let bucket: String
    private let currentKeys = Mutex(S3Keys(accessKeyID: "vigil-test", secretAccessKey: "vigil-test-secret", sessionToken: nil))

    /// `${XDG_CACHE_HOME:-~/.cache}/vigil/moto`, as Scripts/setup makes it.
    public static var venv: String {
        let environment = ProcessInfo.processInfo.environment
        let cache = environment["XDG_CACHE_HOME"].flatMap { $0.isEmpty ? nil : $0 } ?? "\(environment["HOME"] ?? "/root")/.cache"
        return "\(cache)/vigil/moto"
    }

    static func script(_ name: String) -> String {
        URL(fileURLWithPath: #filePath).deletingLastPathComponent().appendingPathComponent("Servers/\(name)").path
    }

    /// Starts moto and creates `bucket` (unsigned, which moto allows while auth is off).
    public init(bucket: String = "vigil") async throws {
        let binary = "\(Self.venv)/bin/moto_server"
        guard FileManager.default.isExecutableFile(atPath: binary) else {
            throw LoopbackCameraServerError(message: "\(binary) is missing: run Scripts/setup --tests")
        }
        var lastError = ""
        // A free port can be taken between the probe and moto's bind: try a few.
        for _ in 0..<3 {
            let port = LoopbackCameraServer.freePort()
            let process = Process()
            // moto_server's own main, with its signature check fixed for encoded keys (moto-server.py).
            process.executableURL = URL(fileURLWithPath: "\(Self.venv)/bin/python")
            process.arguments = [Self.script("moto-server.py"), "-H", "127.0.0.1", "-p", "\(port)"]
            process.standardOutput = FileHandle.nullDevice
            process.standardError = FileHandle.nullDevice
            try process.run()
            let created = await Self.runHelper(["create-bucket", "http://127.0.0.1:\(port)", bucket])
            if created.status == 0, process.isRunning {
                self.process = process
                self.port = port
                self.bucket = bucket
                return
            }
            lastError = created.errorOutput
            Self.kill(process)
        }
        throw LoopbackCameraServerError(message: "moto did not start: \(lastError)")
    }

    /// `http://127.0.0.1:PORT`.
    public var endpointURL: String { "http://127.0.0.1:\(port)" }

    /// The keys moto accepts: any before `enableAuthentication()`, the IAM user's after.
    public var keys: S3Keys { currentKeys.withLock { $0 } }

    /// Path-style endpoint of the bucket, as Vigil's client takes it.
    public var endpoint: S3Endpoint {
        S3Endpoint(scheme: "http", host: "127.0.0.1", port: port, bucket: bucket, region: "us-east-1", pathStyle: true)
    }

    /// Switches moto's signature checking on and returns the keys of a user allowed `s3:*`; from
    /// then on a wrong secret gets `SignatureDoesNotMatch` and an unknown key `InvalidAccessKeyId`.
    @discardableResult
    public func enableAuthentication() async throws -> S3Keys {
        let result = await Self.runHelper(["enable-auth", endpointURL])
        let words = result.output.split(whereSeparator: \.isWhitespace).map(String.init)
        guard result.status == 0, words.count == 2 else {
            throw LoopbackCameraServerError(message: "moto's auth could not be enabled: \(result.errorOutput)")
        }
        let keys = S3Keys(accessKeyID: words[0], secretAccessKey: words[1], sessionToken: nil)
        currentKeys.withLock { $0 = keys }
        return keys
    }

    /// The hex SHA-256 of an object as boto3 downloads it.
    public func objectSHA256(_ key: String) async throws -> String {
        let keys = keys
        let result = await Self.runHelper(["sha256", endpointURL, bucket, key, keys.accessKeyID, keys.secretAccessKey])
        guard result.status == 0 else { throw LoopbackCameraServerError(message: "boto3 could not read \(key): \(result.errorOutput)") }
        return result.output.trimmingCharacters(in: .whitespacesAndNewlines)
    }

    /// Every key in the bucket, as boto3 lists them.
    public func listKeys() async throws -> [String] {
        let keys = keys
        let result = await Self.runHelper(["list", endpointURL, bucket, keys.accessKeyID, keys.secretAccessKey])
        guard result.status == 0 else { throw LoopbackCameraServerError(message: "boto3 could not list: \(result.errorOutput)") }
        return result.output.split(separator: "\n").map(String.init)
    }

    public func stop() { Self.kill(process) }

    deinit { stop() }

    private static func kill(_ process: Process) {
        guard process.isRunning else { return }
        Glibc.kill(process.processIdentifier, SIGKILL)
        process.waitUntilExit()
    }

    /// Runs the helper with the venv's python on a thread of its own (it waits for a process).
    private static func runHelper(_ arguments: [String]) async -> (status: Int32, output: String, errorOutput: String) {
        await withCheckedContinuation { continuation in
            Thread.detachNewThread {
                continuation.resume(returning: RecordingInspector.run("\(venv)/bin/python", [script("s3-moto-helper.py")] + arguments))
            }
        }
    }
}
