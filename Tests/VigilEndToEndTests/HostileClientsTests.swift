import CaptureTesting
import Foundation
import Glibc
import Recorder
import Synchronization
import Testing

/// The web server attacked while two cameras record: by schemathesis against its OpenAPI
/// description, by seeded raw-socket garbage, and by 1100 idle sockets under Debian's default
/// open-file limit. Each test ends by decoding every segment: recording must not have lost a
/// frame. Figures (cases, requests, memory, descriptors, gaps) are printed for the notes.
@Suite(.timeLimit(.minutes(4))) struct HostileClientsTests {
    /// schemathesis, installed by `Scripts/setup --tests` in a virtual environment of its own.
    static var schemathesis: String {
        let cache = ProcessInfo.processInfo.environment["XDG_CACHE_HOME"] ?? NSHomeDirectory() + "/.cache"
        return cache + "/vigil/schemathesis/bin/st"
    }

    /// Every operation of docs/openapi.yaml (as served) with schemathesis's examples, coverage,
    /// fuzzing and stateful phases, positive and negative data, and every check schemathesis has
    /// (no 5xx; every status, content type, header and body as described; negative data refused;
    /// 405 for methods a path does not take) but one: `positive_data_acceptance` takes every
    /// value the schema allows as one the server must accept, and Vigil checks more than JSON
    /// Schema can say (a time must be a real date from 1970 to 2261, a byte range must lie in
    /// the file, a body is at most 1 KiB): those answers are 400, 413 and 416, all described.
    /// live.mjpeg is left out: it never ends.
    @Test func schemathesisFindsNothingOutsideTheDescription() async throws {
        try #require(FileManager.default.isExecutableFile(atPath: Self.schemathesis), "schemathesis is missing: run Scripts/setup --tests")
        let vigil = try await ServedRecorder.start()
        defer { vigil.remove() }
        let base = "http://127.0.0.1:\(vigil.port)"
        let log = vigil.dir.path + "/schemathesis.txt"
        let status = try await runProgram(Self.schemathesis, [
            "run", base + "/api/v1/openapi.yaml", "--url", base, "--phases", "examples,coverage,fuzzing,stateful", "--mode", "all",
            "--checks", "all", "--exclude-checks", "positive_data_acceptance",
            "--exclude-operation-id", "liveMJPEG", "--max-examples", "10", "--seed", "25", "--workers", "1", "--request-timeout", "20",
            "--suppress-health-check", "all",
        ], output: log)
        let report = (try? String(contentsOfFile: log, encoding: .utf8)) ?? ""
        let cases = report.split(separator: "\n").first { $0.contains(" generated, ") }.map { $0.trimmingCharacters(in: .whitespaces) } ?? "?"
        print("schemathesis: \(cases)")
        #expect(status == 0, "schemathesis found problems:\n\(report.suffix(6000))")
        #expect(cases.contains("generated") && !cases.contains(" 0 generated"), "\(report.suffix(2000))")
        #expect(vigil.process.isRunning)
        #expect(await vigil.stop() == 0, "\(vigil.errors())")
        try vigil.expectGaplessRecording("schemathesis ran")
    }

    /// Seeded raw-socket garbage (≥ 2000 requests: random bytes, mutated requests, huge heads,
    /// pipelines, bad bodies), slowloris and half-closed sockets, while /healthz is asked from
    /// another address twice a second: it always answers, nothing is a 5xx, memory stays
    /// bounded, recording loses nothing. `VIGIL_FUZZ_SEED` replays a run.
    @Test func httpFuzzWhileTwoCamerasRecord() async throws {
        let vigil = try await ServedRecorder.start()
        defer { vigil.remove() }
        let seed = SeededRandom.fromEnvironment("VIGIL_FUZZ_SEED", label: "HTTP fuzz").seed
        let port = vigil.port
        let shared = FuzzShared()
        // The watcher: /healthz from 127.0.0.2 and vigil's memory, twice a second.
        let watcher = Thread {
            while !shared.stop.load(ordering: .relaxed) {
                let answered = vigil.healthz()
                let resident = vigil.residentMiB ?? 0
                shared.tally.withLock {
                    $0.healthChecks += 1
                    if !answered { $0.healthFailures += 1 }
                    $0.maxResidentMiB = max($0.maxResidentMiB, resident)
                }
                usleep(500_000)
            }
        }
        watcher.start()
        let workers = 4, perWorker = 520
        var threads: [Thread] = []
        for w in 0..<workers {
            threads.append(Thread {
                var random = SeededRandom(seed: seed &+ UInt64(w))
                for _ in 0..<perWorker { FuzzCase.random(&random).run(port: port, tally: shared.tally) }
                shared.done.add(1, ordering: .relaxed)
            })
        }
        // Slow clients beside them: heads a byte at a time, and requests cut off by a half close.
        threads.append(Thread {
            var random = SeededRandom(seed: seed &+ 100)
            FuzzCase.slowClients(port: port, count: 40, random: &random, tally: shared.tally)
            shared.done.add(1, ordering: .relaxed)
        })
        for thread in threads { thread.start() }
        let count = threads.count
        #expect(await waitUntil(seconds: 170) { shared.done.load(ordering: .relaxed) == count }, "the fuzz did not finish")
        shared.stop.store(true, ordering: .relaxed)
        try await Task.sleep(for: .milliseconds(600))
        let result = shared.tally.withLock { $0 }
        print("HTTP fuzz (seed \(seed)): \(result.requests) requests, \(result.answered) answered, \(result.closedUnanswered) closed without an answer, "
            + "statuses \(result.statuses.sorted { $0.key < $1.key }.map { "\($0.key)×\($0.value)" }.joined(separator: " ")); "
            + "\(result.slowClosed) of \(result.slow) slow or half-closed sockets closed by the server; "
            + "/healthz \(result.healthChecks - result.healthFailures)/\(result.healthChecks); max RSS \(String(format: "%.1f", result.maxResidentMiB)) MiB")
        #expect(result.requests >= 2000)
        #expect(result.healthFailures == 0, "/healthz did not answer \(result.healthFailures) time(s)")
        #expect(result.serverErrors.isEmpty, "5xx answers: \(result.serverErrors.prefix(5))")
        #expect(result.slowClosed == result.slow, "slow sockets left open by the server")
        #expect(result.maxResidentMiB > 0 && result.maxResidentMiB < 400, "RSS reached \(result.maxResidentMiB) MiB")
        #expect(vigil.process.isRunning, "vigil died: \(vigil.errors().suffix(2000))")
        #expect(await vigil.stop() == 0, "\(vigil.errors().suffix(2000))")
        try vigil.expectGaplessRecording("the fuzz ran")
    }

    /// 1100 sockets that connect and send nothing, held while two cameras record under Debian's
    /// default open-file limit (1024, set with prlimit). Before, they took every descriptor:
    /// recording failed ("Too many open files") with gaps of 35–44 s. Now the server keeps to its
    /// share of the limit (the fd-derived cap, per-client cap lifted here) and recording to its.
    @Test func elevenHundredIdleSocketsUnderALimitOf1024CostRecordingNothing() async throws {
        // The test's own sockets need more than 1024 descriptors (as root, the hard limit may rise too).
        var limit = rlimit()
        if geteuid() == 0, getrlimit(__rlimit_resource_t(RLIMIT_NOFILE.rawValue), &limit) == 0, limit.rlim_max < 4096 {
            limit.rlim_max = 4096
            setrlimit(__rlimit_resource_t(RLIMIT_NOFILE.rawValue), &limit)
        }
        let ours = OpenFileLimit.raiseToHard()
        try #require(ours >= 1300, "this test needs an open-file hard limit of at least 1300 (ulimit -Hn is \(ours))")
        let vigil = try await ServedRecorder.start(http: "max_connections_per_client = 100000", under: ["/usr/bin/prlimit", "--nofile=1024:1024"])
        defer { vigil.remove() }
        let limits = try String(contentsOfFile: "/proc/\(vigil.process.processIdentifier)/limits", encoding: .utf8)
        try #require(limits.split(separator: "\n").contains { $0.hasPrefix("Max open files") && $0.contains(" 1024 ") }, "\(limits)")
        var sockets: [RawConnection] = []
        for _ in 0..<1100 { sockets.append(try RawConnection(port: vigil.port, waits: false)) }
        // Held past the header timeout (10 s), so the server closes some and takes others from its backlog.
        var mostOpen = 0
        for _ in 0..<30 {
            mostOpen = max(mostOpen, vigil.openFiles)
            try await Task.sleep(for: .milliseconds(500))
        }
        let stillRunning = vigil.process.isRunning
        for socket in sockets { socket.close() }
        let healthy = await waitUntil(seconds: 30) { vigil.healthz() }
        print("1100 idle sockets under a limit of 1024: vigil held at most \(mostOpen) descriptors")
        #expect(stillRunning && healthy)
        #expect(mostOpen < 1024 - OpenFileLimit.reserve(limit: 1024) / 2, "the web server took descriptors recording keeps: \(mostOpen)")
        #expect(await vigil.stop() == 0, "\(vigil.errors().suffix(2000))")
        #expect(!vigil.errors().contains("Too many open files"), "\(vigil.errors().suffix(2000))")
        try vigil.expectGaplessRecording("1100 idle sockets were held")
    }
}

/// What the fuzz's threads share.
final class FuzzShared: Sendable {
    let tally = Mutex(FuzzTally())
    let stop = Atomic<Bool>(false)
    let done = Atomic<Int>(0)
}

/// What the fuzz saw.
struct FuzzTally: Sendable {
    var requests = 0
    var answered = 0
    var closedUnanswered = 0
    var statuses: [Int: Int] = [:]
    /// 5xx answers other than 503 (a limit) and 507 (a clip that does not fit), with their request.
    var serverErrors: [String] = []
    var slow = 0
    var slowClosed = 0
    var healthChecks = 0
    var healthFailures = 0
    var maxResidentMiB = 0.0
}

/// One fuzz request: bytes to send on a connection of its own, after which the client closes its
/// side (the server sees the end of the request and answers what it can at once).
struct FuzzCase {
    let bytes: [UInt8]

    static let paths = [
        "/", "/healthz", "/metrics", "/api/v1/cameras", "/api/v1/openapi.yaml", "/static/app.js", "/static/nothing",
        "/api/v1/cameras/a/recordings", "/api/v1/cameras/b/stills", "/api/v1/cameras/a/events", "/api/v1/cameras/a/snapshot.jpg",
        "/api/v1/cameras/a/clip.mp4", "/api/v1/cameras/b/live", "/api/v1/recordings/1/file", "/api/v1/stills/2", "/api/v1/events/1/thumbnail.jpg",
        "/api/v1/cameras/%00/recordings", "/api/v1/cameras/..%2F..%2Fetc/stills", "/api/v1/recordings/+2/file", "/api/v1/recordings/99999999999999999999/file",
    ]
    static let values = ["0001-01-01", "9999-12-31", "today", "now", "yesterday", "2026-02-30", "-1", "1e308", "NaN", "%ZZ", "%00", "2263-01-01T00:00:00Z",
                         "1970-01-01T00:00:00Z", "2026-11-22T10:00:00%2B25:00", String(repeating: "9", count: 400), "𝕍", ""]
    static let headers = ["Range: bytes=0-10", "Range: bytes=-99999999999999999999", "Range: bytes=5-1", "If-None-Match: *", "Authorization: bearer x",
                          "Origin: http://evil.example", "Host: evil.example", "Content-Length: -5", "Transfer-Encoding: chunked", "Upgrade: websocket",
                          "Connection: Upgrade", "Expect: 100-continue", "Cookie: vigil_session=guess", "X-\u{01}: x", ": empty name"]
    static let methods = ["GET", "GET", "GET", "HEAD", "POST", "PUT", "DELETE", "OPTIONS", "TRACE", "CONNECT", "PRI", "get", "G\u{00}T"]

    static func random(_ random: inout SeededRandom) -> FuzzCase {
        func pick<T>(_ list: [T]) -> T { list[Int.random(in: 0..<list.count, using: &random)] }
        switch Int.random(in: 0..<10, using: &random) {
        case 0:
            // Random bytes, ended as a head would be so the parser decides at once.
            let count = Int.random(in: 1...2000, using: &random)
            return FuzzCase(bytes: (0..<count).map { _ in UInt8.random(in: 0...255, using: &random) } + Array("\r\n\r\n".utf8))
        case 1:
            // A head far over the limits.
            let size = Int.random(in: 17_000...200_000, using: &random)
            return FuzzCase(bytes: Array("GET \(pick(paths)) HTTP/1.1\r\nHost: 127.0.0.1\r\nX-Big: \(String(repeating: "b", count: size))\r\n\r\n".utf8))
        case 2:
            // Several requests in one write.
            let head = "GET \(pick(paths)) HTTP/1.1\r\nHost: 127.0.0.1\r\n\r\n"
            return FuzzCase(bytes: Array((head + head + "GET /healthz HTTP/1.1\r\nHost: 127.0.0.1\r\nConnection: close\r\n\r\n").utf8))
        case 3:
            // A body that says one length and sends another.
            return FuzzCase(bytes: Array("POST /login HTTP/1.1\r\nHost: 127.0.0.1\r\nContent-Length: 100\r\n\r\ntoken=abc".utf8))
        default:
            // A request with mutated parts.
            var path = pick(paths)
            if Bool.random(using: &random) { path += "?from=\(pick(values))&to=\(pick(values))" }
            if Int.random(in: 0..<5, using: &random) == 0 { path = String(path.shuffled(using: &random)) }
            var lines = ["\(pick(methods)) \(path) HTTP/1.\(Int.random(in: 0...1, using: &random))", "Host: 127.0.0.1"]
            for _ in 0..<Int.random(in: 0...3, using: &random) { lines.append(pick(headers)) }
            lines.append("Connection: close")
            var bytes = Array((lines.joined(separator: "\r\n") + "\r\n\r\n").utf8)
            if Int.random(in: 0..<8, using: &random) == 0 {
                bytes[Int.random(in: 0..<bytes.count, using: &random)] = UInt8.random(in: 0...255, using: &random)
            }
            return FuzzCase(bytes: bytes)
        }
    }

    /// Sends the case, closes the sending side and reads the answer (until the server closes, or
    /// 20 s). Only `live.mjpeg` never ends, and it is not among the paths.
    func run(port: Int, tally: borrowing Mutex<FuzzTally>) {
        guard let connection = try? RawConnection(port: port) else {
            tally.withLock { $0.requests += 1; $0.closedUnanswered += 1 }
            return
        }
        defer { connection.close() }
        connection.sendBlocking(bytes)
        shutdown(connection.fd, Int32(SHUT_WR))
        let (answer, _) = connection.readBlocking(seconds: 20)
        let status = answer.hasPrefix("HTTP/1.1 ") ? Int(answer.dropFirst(9).prefix(3)) : nil
        tally.withLock { t in
            t.requests += 1
            guard let status else {
                t.closedUnanswered += 1
                return
            }
            t.answered += 1
            t.statuses[status, default: 0] += 1
            if status >= 500 && status != 503 && status != 507 {
                t.serverErrors.append("\(status) for \(String(decoding: bytes.prefix(120), as: UTF8.self))")
            }
        }
    }

    /// `count` sockets at once: half send a head a byte every 300 ms (slowloris), half send a
    /// piece of a request and close their side; all must be closed by the server.
    static func slowClients(port: Int, count: Int, random: inout SeededRandom, tally: borrowing Mutex<FuzzTally>) {
        var connections: [(RawConnection, [UInt8])] = []
        for i in 0..<count {
            guard let c = try? RawConnection(port: port) else { continue }
            let head = Array("GET /api/v1/cameras/a/recordings?from=today HTTP/1.1\r\nHost: 127.0.0.1\r\nX-Slow: \(i)\r\n".utf8)
            if i % 2 == 1 {
                c.sendBlocking(Array(head.prefix(Int.random(in: 1..<head.count, using: &random))))
                shutdown(c.fd, Int32(SHUT_WR))
            }
            connections.append((c, i % 2 == 0 ? head : []))
        }
        tally.withLock { $0.slow += connections.count; $0.requests += connections.count }
        var open = Set(connections.indices)
        var sent = 0
        let deadline = Date().addingTimeInterval(60)
        while !open.isEmpty && Date() < deadline {
            for i in open {
                let (c, head) = connections[i]
                if sent < head.count && !c.sendBlocking([head[sent]]) {
                    open.remove(i)
                    continue
                }
                // Closed by the server (with or without an answer)?
                var byte: UInt8 = 0
                let n = recv(c.fd, &byte, 1, Int32(MSG_DONTWAIT | MSG_PEEK))
                if n == 0 || (n < 0 && errno != EAGAIN && errno != EWOULDBLOCK) || (n > 0 && c.readBlocking(seconds: 5).closed) { open.remove(i) }
            }
            sent += 1
            usleep(300_000)
        }
        tally.withLock { $0.slowClosed += connections.count - open.count }
        for (c, _) in connections { c.close() }
    }
}
