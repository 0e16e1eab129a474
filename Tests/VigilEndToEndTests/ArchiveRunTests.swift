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
        #expect(try await s3.listKeys().contains { $0.hasPrefix("site/cam/stills/") && $0.hasSuffix(".jpg") }, "stills are archived too")
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

        // The web page plays a recording kept only in the bucket (headless Chromium).
        let report = try await BrowserCheck.run("archive_check.py", url: "http://127.0.0.1:\(run.port)", size: "desktop", arguments: ["cam"])
        BrowserCheck.expect(report, required: ["archive-plays", "archive-no-error", "archive-console"], size: "desktop")
        let played = report.checks.first { $0.name == "archive-plays" }?.detail ?? ""
        let parts = played.split(separator: "/")
        let playedID = parts.firstIndex(of: "recordings").flatMap { parts.index($0, offsetBy: 1, limitedBy: parts.count - 1) }.flatMap { Int64(parts[$0]) }
        let playedEntry = try playedID.flatMap { try RecordingIndex(root: run.data).entry(id: $0) }
        print("archive page check: \(played)")
        #expect(playedEntry?.location == .archive, "the page played \(played), which is \(playedEntry.map { "\($0.location)" } ?? "unknown"), not archive-only")

        expectArchiveMetrics(run)
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
        // `vigil export` joins recordings from the bucket.
        let exported = run.dir.path + "/export.mp4"
        let export = VigilBinary.run(["export", "--config", run.config, "--camera", "cam", "--from", first.start, "--to", last.end, "-o", exported])
        #expect(export.status == 0, "\(export.errorOutput)")
        #expect(RecordingInspector.ffprobeProblem(exported) == nil)
        #expect(try RecordingInspector.decode(exported).sequences.count >= first.frames + 1)
        // And a new run plays them from the bucket.
        try await run.start()
        let back = try #require(after.first { $0.path == recording.path })
        let id2 = try #require(try run.apiRecordingID(path: back.path))
        let again = run.dir.path + "/again.mp4"
        #expect(run.curl("/api/v1/recordings/\(id2)/file", to: again) == "200")
        #expect(try Data(contentsOf: URL(fileURLWithPath: again)) == wholeBytes)
        try await run.stop()
    }

    /// The archive's metrics in `/metrics`, and the page's address said at start.
    private func expectArchiveMetrics(_ run: ArchivedRun) {
        let metrics = run.dir.path + "/metrics.txt"
        #expect(run.curl("/metrics", to: metrics) == "200")
        let text = (try? String(contentsOfFile: metrics, encoding: .utf8)) ?? ""
        for name in ["vigil_archive_queue_files", "vigil_archive_queue_bytes", "vigil_archive_uploaded_bytes_total"] {
            #expect(text.contains(name), "\(name) missing from /metrics")
        }
        #expect(run.said().contains("Web page:"))
    }

    /// `redirect = true`: an archived file is answered with a redirect to a presigned URL, which
    /// reads the bucket directly, ranges included. (moto checks presigned URLs only with its
    /// signature checks off: with them on it answers 500.)
    @Test func withRedirectTheBrowserReadsTheBucketThroughAPresignedURL() async throws {
        let s3 = try await S3TestServer()
        defer { s3.stop() }
        let run = try ArchivedRun(endpoint: s3.endpointURL, keyID: s3.keys.accessKeyID, secret: s3.keys.secretAccessKey,
                                  extra: "keep_local_days = 0\nredirect = true")
        defer { run.remove() }
        try await run.start()
        let gone = await waitUntil(seconds: 60) { (try? run.recordings().contains { $0.location == "archive" }) ?? false }
        try #require(gone, "nothing was archived: \(run.errors())")
        let recording = try #require(try run.recordings().first { $0.location == "archive" })
        let id = try #require(try run.apiRecordingID(path: recording.path))
        let headers = run.dir.path + "/headers.txt"
        let answer = RecordingInspector.run("/usr/bin/curl", ["-sS", "-o", "/dev/null", "-D", headers, "-w", "%{http_code} %{redirect_url}",
                                                              "http://127.0.0.1:\(run.port)/api/v1/recordings/\(id)/file"])
        let words = answer.output.split(separator: " ")
        #expect(words.first == "307", "\(answer.output)")
        let location = String(words.dropFirst().first ?? "")
        #expect(location.hasPrefix(s3.endpointURL + "/vigil/site/" + recording.path) && location.contains("X-Amz-Signature="), "\(location)")
        // The presigned URL itself, with a range, as a browser's <video> asks.
        let part = run.dir.path + "/part.bin"
        let ranged = RecordingInspector.run("/usr/bin/curl", ["-sS", "-o", part, "-w", "%{http_code}", "-H", "Range: bytes=0-99", location])
        #expect(ranged.output == "206", "\(ranged.output) \(ranged.errorOutput)")
        #expect((try? Data(contentsOf: URL(fileURLWithPath: part)))?.count == 100)
        #expect(((try? String(contentsOfFile: headers, encoding: .utf8)) ?? "").lowercased().contains("cache-control: no-store"))
        try await run.stop()
    }

    /// `check-config` lists the bucket once: refused keys are an error at `[archive]`, an endpoint
    /// that does not answer is a note, and right keys pass; the secret is never printed.
    @Test func checkConfigTriesTheBucketWithItsKeys() async throws {
        let s3 = try await S3TestServer()
        defer { s3.stop() }
        let keys = try await s3.enableAuthentication()
        let good = try ArchivedRun(endpoint: s3.endpointURL, keyID: keys.accessKeyID, secret: keys.secretAccessKey)
        defer { good.remove() }
        let ok = VigilBinary.run(["check-config", good.config])
        #expect(ok.status == 0, "\(ok.errorOutput)")
        #expect(ok.output.contains("archive: s3://vigil/site at \(s3.endpointURL) (us-east-1), keys from \(good.dir.path)/s3"), "\(ok.output)")
        let bad = try ArchivedRun(endpoint: s3.endpointURL, keyID: keys.accessKeyID, secret: "wrong-secret")
        defer { bad.remove() }
        let refused = VigilBinary.run(["check-config", bad.config])
        #expect(refused.status == 1)
        #expect(refused.errorOutput.contains("vigil.toml:7: error: the archive s3://vigil/site refuses this check") && refused.errorOutput.contains("SignatureDoesNotMatch"),
                "\(refused.errorOutput)")
        #expect(VigilBinary.run(["check-config", "--no-probe", bad.config]).status == 0, "--no-probe does not ask the bucket")
        let silent = try ArchivedRun(endpoint: "http://127.0.0.1:\(LoopbackCameraServer.freePort())", keyID: "a", secret: "b")
        defer { silent.remove() }
        let unreachable = VigilBinary.run(["check-config", "--timeout", "5", silent.config])
        #expect(unreachable.status == 0, "\(unreachable.errorOutput)")
        #expect(unreachable.output.contains("note: the archive s3://vigil/site cannot be reached now"), "\(unreachable.output)")
        for text in [ok.output, ok.errorOutput, refused.output, refused.errorOutput] { #expect(!text.contains(keys.secretAccessKey) && !text.contains("wrong-secret")) }
    }

    /// `max_age_days`: archived recordings older than that are deleted from the bucket, and, with
    /// no local copy left, from the index (looked at every minute).
    @Test func maxAgeDaysDeletesOldRecordingsFromTheBucket() async throws {
        let s3 = try await S3TestServer()
        defer { s3.stop() }
        // 0.0001 days: 8.6 s.
        let run = try ArchivedRun(endpoint: s3.endpointURL, keyID: s3.keys.accessKeyID, secret: s3.keys.secretAccessKey,
                                  extra: "keep_local_days = 0\nmax_age_days = 0.0001")
        defer { run.remove() }
        try await run.start()
        let archived = await waitUntil(seconds: 60) { (try? run.recordings().contains { $0.location == "archive" }) ?? false }
        try #require(archived, "nothing was archived: \(run.errors())")
        let oldest = try #require(try run.recordings().first { $0.location == "archive" })
        let key = "site/" + oldest.path
        #expect(try await s3.listKeys().contains(key))
        let deleted = await waitUntil(seconds: 100) {
            let keys = (try? await s3.listKeys()) ?? [key]
            return !keys.contains(key) && !((try? run.recordings().map(\.path)) ?? [oldest.path]).contains(oldest.path)
        }
        #expect(deleted, "\(oldest.path) is still in the bucket or the index: \(run.errors())")
        // Said once the pass has deleted all it found (after the first entry went).
        #expect(await waitUntil(seconds: 30) { run.errors().contains("(max_age_days)") }, "the deletion was not said")
        try await run.stop()
    }

    /// Keys the bucket refuses: one clear error line, not one per file; the queue backs off
    /// (a few requests, not one per segment); recording goes on. With the right keys after a
    /// restart, everything recorded meanwhile reaches the bucket.
    @Test func refusedKeysAreSaidOnceBackOffAndTheQueueDrainsWithGoodKeys() async throws {
        let s3 = try await S3TestServer()
        defer { s3.stop() }
        let keys = try await s3.enableAuthentication()
        let proxy = try S3FaultProxy(upstreamPort: s3.port)
        defer { proxy.stop() }
        let run = try ArchivedRun(endpoint: proxy.endpointURL, keyID: keys.accessKeyID, secret: "not-the-secret")
        defer { run.remove() }
        try await run.start()
        // The stimulus: 20 s of refused uploads while the camera records a segment a second.
        try await Task.sleep(for: .seconds(20))
        let requests = try await proxy.total()
        let segments = try run.recordings().count
        let refusals = run.errors().split(separator: "\n").filter { $0.contains("refuses these keys") }
        print("refused keys: \(requests) request(s) to the bucket in 20 s while \(segments) segments were recorded; \(refusals.count) error line(s)")
        #expect(refusals.count == 1, "\(run.errors())")
        #expect(refusals.first?.contains("SignatureDoesNotMatch") ?? false)
        #expect(requests <= 12, "no backoff: \(requests) requests in 20 s")
        #expect(segments >= 15, "recording suffered: \(segments) segments")
        let metrics = run.dir.path + "/metrics.txt"
        _ = run.curl("/metrics", to: metrics)
        #expect(((try? String(contentsOfFile: metrics, encoding: .utf8)) ?? "").contains(#"vigil_archive_failures_total{reason="auth"}"#))
        try await run.stop()
        #expect(!run.errors().contains("not-the-secret"), "the secret was printed")

        // The right keys: everything recorded so far reaches the bucket.
        let waiting = try run.recordings().map(\.path)
        try run.useKeys(id: keys.accessKeyID, secret: keys.secretAccessKey)
        try await run.start()
        let drained = await waitUntil(seconds: 90) {
            let inBucket = Set(((try? await s3.listKeys()) ?? []).map { String($0.dropFirst("site/".count)) })
            return waiting.allSatisfy(inBucket.contains)
        }
        #expect(drained, "the queue did not drain with the right keys: \(run.errors())")
        try await run.stop()
    }

    /// The bucket answers 500, then 503 SlowDown, then too slowly: each is retried with backoff,
    /// counted by its reason, and in the end every file is in the bucket, once.
    @Test func serverErrorsThrottlingAndSlowAnswersAreRetriedUntilEverythingIsArchived() async throws {
        let s3 = try await S3TestServer()
        defer { s3.stop() }
        let proxy = try S3FaultProxy(upstreamPort: s3.port)
        defer { proxy.stop() }
        let run = try ArchivedRun(endpoint: proxy.endpointURL, keyID: s3.keys.accessKeyID, secret: s3.keys.secretAccessKey, extra: "timeout_seconds = 2")
        defer { run.remove() }
        try await proxy.set(#"{"fail":3,"status":500,"code":"InternalError"}"#)
        try await run.start()
        _ = await waitUntil(seconds: 60) { (try? await proxy.count("put_object", status: 500)) ?? 0 >= 1 }
        try await proxy.set(#"{"fail":3,"status":503,"code":"SlowDown"}"#)
        _ = await waitUntil(seconds: 60) { (try? await proxy.count("put_object", status: 503)) ?? 0 >= 1 }
        // Slower than timeout_seconds: the client gives up and tries again later.
        try await proxy.set(#"{"delay":4}"#)
        let timedOut = await waitUntil(seconds: 60) { run.metric(#"vigil_archive_failures_total{reason="timeout"}"#) ?? 0 >= 1 }
        #expect(timedOut, "no request timed out: \(run.errors())")
        try await proxy.set(#"{"mode":"pass"}"#)
        _ = await waitUntil(seconds: 60) { run.metric("vigil_archive_queue_files") ?? .infinity <= 3 }
        try await run.stop()
        for reason in ["server", "throttled", "timeout"] {
            #expect(run.lastMetric(#"vigil_archive_failures_total{reason="\#(reason)"}"#) ?? 0 >= 1, "no \(reason) failure counted")
        }
        // Everything recorded is archived once the bucket behaves (a run that only uploads).
        let sync = VigilBinary.run(["archive", "sync", "--config", run.config])
        #expect(sync.status == 0, "\(sync.errorOutput)")
        let inBucket = try await s3.listKeys().filter { $0.hasPrefix("site/cam/") }
        let recorded = try run.recordings().map { "site/" + $0.path }
        #expect(Set(inBucket).isSuperset(of: recorded), "missing from the bucket: \(Set(recorded).subtracting(inBucket).sorted().prefix(5))")
        #expect(inBucket.count == Set(inBucket).count)
        let status = VigilBinary.run(["archive", "status", "--config", run.config])
        #expect(status.output.contains("waiting: 0 file(s)"), "\(status.output)")
    }

    /// kill -9 in the middle of a multipart upload: the next start resumes it, without sending
    /// again a part the bucket had, and the object is whole (its SHA-256 is the file's).
    @Test func aMultipartUploadKilledHalfwayResumesWithoutResendingParts() async throws {
        let s3 = try await S3TestServer()
        defer { s3.stop() }
        let keys = try await s3.enableAuthentication()
        let proxy = try S3FaultProxy(upstreamPort: s3.port)
        defer { proxy.stop() }
        let run = try ArchivedRun(endpoint: proxy.endpointURL, keyID: keys.accessKeyID, secret: keys.secretAccessKey, extra: #"part_size = "5MiB""#)
        defer { run.remove() }
        // A ~20 MiB recording from yesterday (noise does not compress), adopted by the first start's recovery: four or five parts.
        let day = Date().addingTimeInterval(-86_400)
        let name = "cam-" + Self.stamp(day) + ".mp4"
        let folder = run.data + "/cam/video/" + Self.day(day)
        try FileManager.default.createDirectory(atPath: folder, withIntermediateDirectories: true)
        let big = folder + "/" + name
        let made = RecordingInspector.run("/usr/bin/ffmpeg", ["-loglevel", "error", "-f", "lavfi", "-i", "testsrc=size=640x480:rate=25,noise=alls=60:allf=t+u", "-t", "4",
                                                               "-c:v", "libx264", "-preset", "ultrafast", "-qp", "18", "-g", "25", big])
        try #require(made.status == 0, "\(made.errorOutput)")
        let size = try #require((try FileManager.default.attributesOfItem(atPath: big)[.size] as? NSNumber)?.intValue)
        try #require(size > 15 * 1_048_576, "the test file is only \(size) bytes")
        let parts = (size + 5 * 1_048_576 - 1) / (5 * 1_048_576)
        let hash = try sha256(big)
        try await proxy.set(#"{"rate":2097152}"#)
        try await run.start()
        let halfway = await waitUntil(seconds: 60) { (try? await proxy.count("upload_part", status: 200)) ?? 0 >= 1 }
        try #require(halfway, "no part was uploaded: \(run.errors())")
        await run.kill9()
        let before = try await proxy.count("upload_part", status: 200)
        try #require(before < parts, "the upload finished before the kill")
        try await proxy.set(#"{"mode":"pass"}"#)
        try await run.start()
        let key = "site/cam/video/\(Self.day(day))/\(name)"
        let done = await waitUntil(seconds: 90) { ((try? await s3.listKeys()) ?? []).contains(key) }
        try #require(done, "the upload did not resume: \(run.errors())")
        #expect(try await s3.objectSHA256(key) == hash)
        let after = try await proxy.count("upload_part", status: 200)
        print("multipart kill -9: \(before) of \(parts) part(s) confirmed before the kill; \(after) part upload(s) answered 200 in all")
        #expect(after == parts, "parts were sent again: \(after) uploads for \(parts) parts")
        try await run.stop()
        let status = VigilBinary.run(["archive", "status", "--config", run.config])
        #expect(status.output.contains("(0 under way)"), "\(status.output)")
    }

    /// The bucket unreachable for two minutes: recording goes on without a gap, the queue grows
    /// (`vigil_archive_queue_files`), and drains once the bucket is back.
    @Test func twoMinutesWithoutTheBucketCostNoFrameAndTheQueueDrainsAfter() async throws {
        let s3 = try await S3TestServer()
        defer { s3.stop() }
        let proxy = try S3FaultProxy(upstreamPort: s3.port)
        defer { proxy.stop() }
        let run = try ArchivedRun(endpoint: proxy.endpointURL, keyID: s3.keys.accessKeyID, secret: s3.keys.secretAccessKey)
        defer { run.remove() }
        try await run.start()
        try await proxy.set(#"{"down":true}"#)
        try await Task.sleep(for: .seconds(120))
        let queued = run.metric("vigil_archive_queue_files") ?? 0
        print("bucket down 120 s: \(queued) file(s) queued")
        #expect(queued >= 100, "the queue did not grow: \(queued)")
        try await proxy.set(#"{"down":false}"#)
        let drained = await waitUntil(seconds: 120) { run.metric("vigil_archive_queue_files") ?? .infinity <= 3 }
        #expect(drained, "the queue did not drain: \(run.metric("vigil_archive_queue_files") ?? -1) left; \(run.errors())")
        try await run.stop()
        #expect(try run.recordingGaps().isEmpty, "recording had gaps while the bucket was down")
        let frames = try run.recordings().reduce(0) { $0 + $1.frames }
        #expect(frames >= 10 * 115, "only \(frames) frames in 2 minutes at 10 fps")
        let lines = run.errors().split(separator: "\n").filter { $0.contains("cannot be reached") }
        #expect(lines.count == 1, "the outage was not said once: \(lines.count) line(s)")
        #expect(run.errors().contains("answers again"), "the recovery was not said")
    }

    static func stamp(_ date: Date) -> String { utc(date, "yyyyMMdd'T'HHmmss'Z'") }
    static func day(_ date: Date) -> String { utc(date, "yyyy-MM-dd") }
    private static func utc(_ date: Date, _ format: String) -> String {
        let f = DateFormatter()
        f.locale = Locale(identifier: "en_US_POSIX")
        f.timeZone = TimeZone(identifier: "UTC")
        f.dateFormat = format
        return f.string(from: date)
    }
}
