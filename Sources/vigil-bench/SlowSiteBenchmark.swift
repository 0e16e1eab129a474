import CaptureTesting
import Dispatch
import Foundation
import Glibc

/// What `vigil-bench slow-site` is asked for: rounds of requests per phase, and which vigil.
struct SlowSiteOptions: BenchOptions {
    static let usage = "slow-site [--rounds N (1-200, default 20)] [--vigil PATH (default: this build's)]"
    var rounds = 20
    var vigil: String?

    mutating func take(_ flag: String, _ value: String) throws -> Bool {
        switch flag {
        case "--rounds": rounds = try wholeNumber(flag, value, in: 1...200)
        case "--vigil":
            guard FileManager.default.isExecutableFile(atPath: value) else { throw BenchUsageError("--vigil \(value) is not an executable") }
            vigil = value
        default: return false
        }
        return true
    }
}

/// The web server of a `[cluster]` node while its database answers, then while it does not
/// (PostgreSQL behind a proxy that stops passing bytes: every site read waits out its 2 s
/// deadline). Each round asks `GET /api/v1/cameras` (which reads the site) and, 0.1 s later,
/// a local recording's file: the time to each one's status line. A file of this node must not
/// wait for the site (issue 39: one serial thread served both).
func slowSiteBenchmark(_ options: SlowSiteOptions) async throws -> Bool {
    let database = try TestPostgres()
    defer { database.stop() }
    let proxy = try TCPProxy(upstreamPort: database.port)
    defer { proxy.stop() }
    let dir = try TemporaryDirectory("vigil-bench-slow-site")
    defer { dir.remove() }
    let port = LoopbackCameraServer.freePort()
    try """
        [storage]
        root = "\(dir.path)/data"
        [http]
        listen = "127.0.0.1:\(port)"
        [cluster]
        database = "postgresql://\(database.user)@127.0.0.1:\(proxy.port)/postgres"
        [cameras.porch]
        device = "synthetic-0"
        size = "160x120"
        fps = 10
        [[record]]
        camera = "porch"
        segment_seconds = 1
        """.write(toFile: dir.path + "/vigil.toml", atomically: true, encoding: .utf8)
    let process = try VigilBinary.start(
        ["run", "--config", dir.path + "/vigil.toml"], in: dir.path, environment: ["VIGIL_NODE": "node-a"], binary: options.vigil)
    defer { if process.isRunning { process.terminate(); process.waitUntilExit() } }
    var file: String?
    let ready = await waitUntil(seconds: 60) {
        file = SlowSiteRequests.firstRecordingURL(port: port)
        return file != nil
    }
    guard ready, let file else {
        print("slow-site: vigil did not serve a recording within 60 s: \(VigilBinary.output(in: dir.path).suffix(2000))")
        return false
    }
    print("slow-site: vigil run (\(options.vigil ?? VigilBinary.path)), [cluster] on PostgreSQL 15 through a proxy, one synthetic camera; \(options.rounds) rounds a phase")
    await measure("database answering", rounds: options.rounds, port: port, file: file)
    proxy.cut()
    await measure("database silent", rounds: options.rounds, port: port, file: file)
    proxy.heal()
    return true
}

private enum SlowSiteRequests {
    /// The URL of this node's first finished recording, from its API.
    static func firstRecordingURL(port: Int) -> String? {
        guard let answer = statusAndBody(port: port, path: "/api/v1/cameras/porch/recordings?from=2000-01-01&to=2100-01-01", seconds: 10).body,
              let json = try? JSONSerialization.jsonObject(with: Data(answer.utf8)) as? [String: Any],
              let list = json["recordings"] as? [[String: Any]] else { return nil }
        return list.compactMap { $0["url"] as? String }.first { $0.hasPrefix("/api/v1/recordings/") }
    }

    /// Seconds until the status line of `GET path` (and the body, when it is short).
    static func statusAndBody(port: Int, path: String, seconds: Int) -> (seconds: Double?, body: String?) {
        guard let connection = try? RawConnection(port: port) else { return (nil, nil) }
        defer { connection.close() }
        let start = DispatchTime.now().uptimeNanoseconds
        _ = connection.sendBlocking(Array("GET \(path) HTTP/1.1\r\nHost: 127.0.0.1:\(port)\r\nConnection: close\r\n\r\n".utf8))
        let text = connection.readBlocking(seconds: seconds, until: "\r\n\r\n").text
        let elapsed = Double(DispatchTime.now().uptimeNanoseconds - start) / 1e9
        guard text.hasPrefix("HTTP/1.1 200") else { return (nil, nil) }
        let rest = connection.readBlocking(seconds: seconds).text
        return (elapsed, (text.components(separatedBy: "\r\n\r\n").dropFirst().joined() + rest))
    }
}

/// `rounds` of a camera list and, 0.1 s after it, a file: medians and the slowest of each.
private func measure(_ phase: String, rounds: Int, port: Int, file: String) async {
    var lists: [Double] = [], files: [Double] = []
    var failed = 0
    for _ in 0..<rounds {
        async let list = offPool { SlowSiteRequests.statusAndBody(port: port, path: "/api/v1/cameras", seconds: 30).seconds }
        try? await Task.sleep(for: .milliseconds(100))
        let fileSeconds = await offPool { SlowSiteRequests.statusAndBody(port: port, path: file, seconds: 30).seconds }
        let listSeconds = await list
        if let listSeconds, let fileSeconds { lists.append(listSeconds); files.append(fileSeconds) } else { failed += 1 }
    }
    func figures(_ values: [Double]) -> String {
        let sorted = values.sorted()
        guard !sorted.isEmpty else { return "none" }
        return String(format: "median %.3f s, slowest %.3f s", sorted[sorted.count / 2], sorted.last!)
    }
    print("\(phase): /api/v1/cameras \(figures(lists)); a local file's first byte \(figures(files))\(failed > 0 ? "; \(failed) round(s) failed" : "")")
}

/// Blocking socket work on a thread of Dispatch's, not Swift's cooperative pool.
private func offPool<T: Sendable>(_ work: @escaping @Sendable () -> T) async -> T {
    await withCheckedContinuation { continuation in DispatchQueue.global().async { continuation.resume(returning: work()) } }
}
