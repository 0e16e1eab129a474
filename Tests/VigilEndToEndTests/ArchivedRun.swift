import CaptureTesting
import Foundation
import Glibc
import Recorder
import Testing

/// One `vigil run` with a synthetic camera `cam` (1 s segments, a still every second), its web
/// server on a free port, and `[archive]` at `endpoint` (`s3://vigil/site`) with keys in a file.
final class ArchivedRun: @unchecked Sendable {
    let dir: TemporaryDirectory
    let config: String
    let port: Int
    private var process: Process?
    private var lastMetrics = ""
    var data: String { dir.path + "/data" }

    init(endpoint: String, keyID: String, secret: String, extra: String = "", camera: String = "") throws {
        dir = try TemporaryDirectory("vigil-archive")
        let free = try Listener()
        free.close()
        port = free.port
        config = dir.path + "/vigil.toml"
        let credentials = dir.path + "/s3"
        try "[default]\naws_access_key_id = \(keyID)\naws_secret_access_key = \(secret)\n".write(toFile: credentials, atomically: true, encoding: .utf8)
        chmod(credentials, 0o600)
        try """
            [storage]
            root = "\(data)"

            [http]
            listen = "127.0.0.1:\(free.port)"

            [archive]
            url = "s3://vigil/site"
            endpoint = "\(endpoint)"
            credentials_file = "\(credentials)"
            \(extra)

            \(camera.isEmpty ? syntheticCamera("cam", device: 0) : camera)
            [[record]]
            camera = "cam"
            segment_seconds = 1

            [[timelapse]]
            camera = "cam"
            interval_seconds = 1
            """.write(toFile: config, atomically: true, encoding: .utf8)
    }

    /// Starts vigil and returns once its web server answers.
    func start(environment: [String: String] = [:]) async throws {
        let process = try VigilBinary.start(["run", "--config", config], in: dir.path, environment: environment)
        self.process = process
        let probe = dir.path + "/healthz.json"
        let serving = await waitUntil(seconds: 60) { self.curl("/healthz", to: probe) == "200" }
        try #require(serving, "vigil did not start serving: \(errors())")
    }

    func kill9() async {
        guard let process else { return }
        kill(process.processIdentifier, SIGKILL)
        _ = await waitForExit(process, seconds: 30)
    }

    func stop() async throws {
        guard let process else { return }
        if process.isRunning { process.terminate() }
        let exited = await waitForExit(process, seconds: 60)
        try #require(exited, "vigil did not stop")
        #expect(process.terminationStatus == 0, "\(errors())")
    }

    func said() -> String { (try? String(contentsOfFile: dir.path + "/stdout.txt", encoding: .utf8)) ?? "" }
    func errors() -> String { (try? String(contentsOfFile: dir.path + "/stderr.txt", encoding: .utf8)) ?? "" }

    struct Recording {
        let path: String
        let location: String
        let frames: Int
        let start: String
        let end: String
    }

    /// `vigil recordings --json` of the camera's segments.
    func recordings() throws -> [Recording] {
        let listed = VigilBinary.run(["recordings", "--data", data, "--json"])
        try #require(listed.status == 0, "\(listed.errorOutput)")
        let json = try JSONSerialization.jsonObject(with: Data(listed.output.utf8)) as? [String: Any]
        return ((json?["recordings"] as? [[String: Any]]) ?? []).compactMap { row in
            guard let path = row["path"] as? String, let location = row["location"] as? String, let frames = row["frames"] as? Int,
                  let start = row["start"] as? String, let end = row["end"] as? String else { return nil }
            return Recording(path: path, location: location, frames: frames, start: start, end: end)
        }
    }

    /// Uses these keys from now on (the next start).
    func useKeys(id: String, secret: String) throws {
        let credentials = dir.path + "/s3"
        try "[default]\naws_access_key_id = \(id)\naws_secret_access_key = \(secret)\n".write(toFile: credentials, atomically: true, encoding: .utf8)
        chmod(credentials, 0o600)
    }

    /// Uses this endpoint from now on (the next start).
    func useEndpoint(_ endpoint: String) throws {
        let text = try String(contentsOfFile: config, encoding: .utf8)
        let replaced = text.split(separator: "\n", omittingEmptySubsequences: false)
            .map { $0.hasPrefix("endpoint = ") ? "endpoint = \"\(endpoint)\"" : String($0) }.joined(separator: "\n")
        try replaced.write(toFile: config, atomically: true, encoding: .utf8)
    }

    /// A value of `/metrics` now (`name` with its labels); nil when it is not there.
    func metric(_ name: String) -> Double? {
        let file = dir.path + "/metrics.txt"
        guard curl("/metrics", to: file) == "200" else { return nil }
        lastMetrics = (try? String(contentsOfFile: file, encoding: .utf8)) ?? ""
        return lastMetric(name)
    }

    /// A value of the last `/metrics` read.
    func lastMetric(_ name: String) -> Double? {
        lastMetrics.split(separator: "\n").first { $0.hasPrefix(name + " ") }.flatMap { Double($0.split(separator: " ").last ?? "") }
    }

    /// Gaps between the segments the index lists, in seconds.
    func recordingGaps() throws -> [String] {
        let listed = VigilBinary.run(["recordings", "--data", data, "--json"])
        let json = try JSONSerialization.jsonObject(with: Data(listed.output.utf8)) as? [String: Any]
        return ((json?["gaps"] as? [[String: Any]]) ?? []).map { "\($0)" }
    }

    /// The index's id of the file at `path` (what the API names it by).
    func apiRecordingID(path: String) throws -> Int64? {
        try RecordingIndex(root: data).entry(path: path)?.id
    }

    /// `curl` to the web server: the status code it got, the body in `file`.
    func curl(_ path: String, to file: String, headers: [String] = []) -> String {
        let result = RecordingInspector.run("/usr/bin/curl", ["-sS", "-o", file, "-w", "%{http_code}"] + headers.flatMap { ["-H", $0] }
            + ["http://127.0.0.1:\(port)\(path)"])
        return result.output
    }

    func remove() {
        if let process, process.isRunning { kill(process.processIdentifier, SIGKILL); process.waitUntilExit() }
        dir.remove()
    }
}
