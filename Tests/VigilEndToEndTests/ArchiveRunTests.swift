import CaptureTesting
import Foundation
import Glibc
import Recorder
import Testing

/// The hex SHA-256 of a file (`sha256sum`).
func sha256(_ path: String) throws -> String {
    let result = RecordingInspector.run("/usr/bin/sha256sum", [path])
    try #require(result.status == 0, "\(result.errorOutput)")
    return String(result.output.prefix(64))
}

/// `vigil run` with `[archive]` against a real S3 server (moto on loopback, with its signature
/// checks on), as a user runs it: footage reaches the bucket, plays back from there, survives a
/// lost disk through `vigil archive rebuild-index`.
@Suite(.serialized, .timeLimit(.minutes(8))) struct ArchiveRunTests {
    /// Segments are uploaded within a minute, checked by their SHA-256; with keep_local_days = 0
    /// the local copies go; the API, a byte range and a clip play them from the bucket; the
    /// metrics count them; then the disk is lost, rebuild-index lists them again from the bucket,
    /// and a new run serves them.
    @Test func footageReachesTheBucketPlaysFromItAndOutlivesTheDisk() async throws {
        let s3 = try await S3TestServer()
        defer { s3.stop() }
        let keys = try await s3.enableAuthentication()
        let run = try ArchivedRun(endpoint: s3.endpointURL, keyID: keys.accessKeyID, secret: keys.secretAccessKey, extra: "keep_local_days = 0")
        defer { run.remove() }
        try await run.start()

        // Within a minute of closing, segments are in the bucket, and their local copies gone.
        let uploaded = await waitUntil(seconds: 60) {
            ((try? await s3.listKeys()) ?? []).filter { $0.hasPrefix("site/cam/video/") }.count >= 4
        }
        try #require(uploaded, "no segments reached the bucket: \(run.errors())")
        let archivedOnly = await waitUntil(seconds: 30) { (try? run.recordings().filter { $0.location == "archive" }.count) ?? 0 >= 3 }
        try #require(archivedOnly, "local copies were not deleted after upload (keep_local_days = 0): \(run.errors())")
        let listed = try run.recordings()
        let archived = listed.filter { $0.location == "archive" }
        for recording in archived.prefix(3) {
            #expect(!FileManager.default.fileExists(atPath: run.data + "/" + recording.path), "\(recording.path) is still on the disk")
        }

        // The API serves an archived segment whole and in part, the same bytes as the bucket's.
        let recording = try #require(archived.first)
        let id = try #require(try run.apiRecordingID(path: recording.path))
        let whole = run.dir.path + "/whole.mp4"
        #expect(run.curl("/api/v1/recordings/\(id)/file", to: whole) == "200")
        #expect(try sha256(whole) == (try await s3.objectSHA256("site/" + recording.path)))
        #expect(RecordingInspector.ffprobeProblem(whole) == nil)
        #expect(try RecordingInspector.decode(whole).sequences.count == recording.frames)
        let part = run.dir.path + "/part.bin"
        #expect(run.curl("/api/v1/recordings/\(id)/file", to: part, headers: ["Range: bytes=100-1099"]) == "206")
        let wholeBytes = try Data(contentsOf: URL(fileURLWithPath: whole))
        #expect(try Data(contentsOf: URL(fileURLWithPath: part)) == wholeBytes[100..<1100])

        // A clip across archived segments plays.
        let clip = run.dir.path + "/clip.mp4"
        let first = try #require(archived.first), last = try #require(archived.dropFirst(2).first)
        #expect(run.curl("/api/v1/cameras/cam/clip.mp4?from=\(first.start)&to=\(last.end)", to: clip) == "200")
        #expect(RecordingInspector.ffprobeProblem(clip) == nil)
        #expect(try RecordingInspector.decode(clip).sequences.count >= first.frames + 1)

        // The metrics the issue names.
        let metrics = run.dir.path + "/metrics.txt"
        #expect(run.curl("/metrics", to: metrics) == "200")
        let text = (try? String(contentsOfFile: metrics, encoding: .utf8)) ?? ""
        for name in ["vigil_archive_queue_files", "vigil_archive_queue_bytes", "vigil_archive_uploaded_bytes_total"] {
            #expect(text.contains(name), "\(name) missing from /metrics")
        }
        #expect(run.said().contains("Web page:"))
        #expect(!run.errors().contains(keys.secretAccessKey), "the secret was printed")
        try await run.stop()

        // The disk is lost: rebuild-index lists every archived recording again from the bucket.
        let before = try run.recordings().filter { $0.location != "local" }
        try FileManager.default.removeItem(atPath: run.data)
        let rebuilt = VigilBinary.run(["archive", "rebuild-index", "--config", run.config])
        #expect(rebuilt.status == 0, "\(rebuilt.errorOutput)")
        #expect(rebuilt.output.contains("restored"), "\(rebuilt.output)")
        let after = try run.recordings()
        #expect(Set(after.filter { $0.location == "archive" }.map(\.path)).isSuperset(of: before.map(\.path)),
                "rebuild-index lost recordings: \(before.count) archived before, \(after.count) listed after")
        // And a new run plays them from the bucket.
        try await run.start()
        let back = try #require(after.first { $0.path == recording.path })
        let id2 = try #require(try run.apiRecordingID(path: back.path))
        let again = run.dir.path + "/again.mp4"
        #expect(run.curl("/api/v1/recordings/\(id2)/file", to: again) == "200")
        #expect(try Data(contentsOf: URL(fileURLWithPath: again)) == wholeBytes)
        try await run.stop()
    }
}

/// One `vigil run` with a synthetic camera `cam` (1 s segments, a still every second), its web
/// server on a free port, and `[archive]` at `endpoint` (`s3://vigil/site`) with keys in a file.
final class ArchivedRun: @unchecked Sendable {
    let dir: TemporaryDirectory
    let config: String
    let port: Int
    private var process: Process?
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
