import Foundation
import Glibc

/// Three `vigil run` nodes sharing six RTSP cameras (gst-rtsp-server, 160x120 at 10 fps, copied
/// into 1 s segments) through a PostgreSQL started here, as users run a cluster: one
/// configuration file, each node named by `VIGIL_NODE`. Ready once every camera is held by
/// exactly one node, two each. The cluster end-to-end tests and `vigil-bench failover` use it.
public final class LeasedSite {
    public let server: TestPostgres
    public let cameras: [LoopbackCameraServer]
    public let dir: TemporaryDirectory
    /// `lease_seconds`, in seconds.
    public let lease: Double
    public let file: String
    public private(set) var nodes: [String: (dir: String, process: Process)] = [:]
    /// Where each node's web page answers on loopback (`vigil run --listen`); kept across restarts.
    public private(set) var ports: [String: Int] = [:]
    /// The nodes as `vigil cluster status` last listed them in `init`.
    public private(set) var listed: [(name: String, cameras: [String], alive: Bool)] = []
    public let all = Set((0..<6).map { "cam\($0)" })
    /// The node that reaches the database through `proxy` (nil: none), with its own copy of the
    /// configuration that names the proxy's port.
    public let proxied: String?
    public let proxy: TCPProxy?

    /// `leaseSeconds`: `lease_seconds` of the configuration (3...300, as vigil checks);
    /// `proxied`: a node that reaches the database through a `TCPProxy` the test may cut;
    /// `extra`: more of the configuration file (an `[archive]` section); `singleClient`:
    /// cameras that take one client at a time (a hand-over cannot overlap).
    public init(leaseSeconds: Int = 4, proxied: String? = nil, extra: String = "", singleClient: Bool = false) async throws {
        lease = Double(leaseSeconds)
        let server = try TestPostgres()
        self.server = server
        cameras = try (0..<6).map { _ in try LoopbackCameraServer.rtsp(size: "160x120", fps: 10, maxSessions: singleClient ? 1 : 0) }
        dir = try TemporaryDirectory("vigil-cluster-leases")
        file = dir.path + "/vigil.toml"
        self.proxied = proxied
        proxy = try proxied.map { _ in try TCPProxy(upstreamPort: server.port) }
        let cameraTables = cameras.enumerated().map { i, camera in
            "[cameras.cam\(i)]\nurl = \"\(camera.url())\"\n[[record]]\ncamera = \"cam\(i)\"\ncodec = \"copy\"\nsegment_seconds = 1\n"
        }.joined(separator: "\n")
        for (path, port) in [(file, server.port)] + (proxy.map { [(dir.path + "/vigil-proxied.toml", $0.port)] } ?? []) {
            try ("""
                [http]
                listen = ""
                [cluster]
                database = "postgresql://\(server.user)@127.0.0.1:\(port)/postgres"
                lease_seconds = \(leaseSeconds)
                \(extra)

                """ + cameraTables).write(toFile: path, atomically: true, encoding: .utf8)
        }
        for name in ["node-a", "node-b", "node-c"] { try start(name) }
        let ready = await waitForTwoEach(seconds: 90)
        listed = status() ?? []
        guard ready else {
            let problem = LeasedSiteError(description: "not two cameras each within 90 s: \(listed)\n\(nodes.values.map { VigilBinary.output(in: $0.dir).suffix(1500) })")
            remove()
            throw problem
        }
    }

    /// Starts (or starts again) the node `name`, in its own folder under `dir`.
    public func start(_ name: String) throws {
        let home = dir.path + "/" + name
        try FileManager.default.createDirectory(atPath: home, withIntermediateDirectories: true)
        let port = ports[name] ?? LoopbackCameraServer.freePort()
        ports[name] = port
        let process = try VigilBinary.start(
            ["run", "--config", name == proxied ? dir.path + "/vigil-proxied.toml" : file, "--data", home + "/data", "--listen", "127.0.0.1:\(port)"],
            in: home, environment: ["VIGIL_NODE": name])
        nodes[name] = (home, process)
    }

    /// `vigil cluster status --json`'s nodes, or nil when it does not answer.
    public func status() -> [(name: String, cameras: [String], alive: Bool)]? {
        let status = VigilBinary.run(["cluster", "status", "--config", file, "--json"])
        guard status.status == 0, let json = try? JSONSerialization.jsonObject(with: Data(status.output.utf8)) as? [String: Any],
              let list = json["nodes"] as? [[String: Any]] else { return nil }
        return list.map { ($0["node"] as? String ?? "", $0["cameras"] as? [String] ?? [], $0["alive"] as? Bool ?? false) }
    }

    /// The cameras the live nodes other than `node` record.
    public func held(except node: String) -> Set<String> {
        Set((status() ?? []).filter { $0.name != node && $0.alive }.flatMap(\.cameras))
    }

    /// Until every camera is held by exactly one live node of three, two each.
    public func waitForTwoEach(seconds: Double) async -> Bool {
        await waitUntil(seconds: seconds) {
            let now = self.status() ?? []
            let held = now.filter(\.alive).flatMap(\.cameras)
            return now.count == 3 && held.count == 6 && Set(held) == self.all && now.allSatisfy { $0.cameras.count == 2 }
        }
    }

    /// `column` ("expires" or "taken") of every lease that has one, in seconds since 1970 by the
    /// database's clock.
    public func leaseTimes(_ column: String) throws -> [String: Double] {
        let rows = try server.psql("SELECT camera, EXTRACT(EPOCH FROM \(column))::float8 FROM camera_leases WHERE \(column) IS NOT NULL")
        var times: [String: Double] = [:]
        for row in rows.split(separator: "\n") {
            let fields = row.split(separator: "|")
            if fields.count == 2, let time = Double(fields[1]) { times[String(fields[0])] = time }
        }
        return times
    }

    /// The video files of `camera` on `node`'s disk.
    public func recordings(of node: String, camera: String) -> [String] {
        let dir = nodes[node]!.dir + "/data/\(camera)"
        return RecordingInspector.files(under: dir, endingWith: ".mp4") + RecordingInspector.files(under: dir, endingWith: ".mkv")
    }

    /// Kills every node still running (SIGKILL), stops the cameras and the database, and
    /// removes the folder.
    public func remove() {
        for node in nodes.values where node.process.isRunning { kill(node.process.processIdentifier, SIGKILL) }
        for camera in cameras { camera.stop() }
        proxy?.stop()
        server.stop()
        dir.remove()
    }
}

public struct LeasedSiteError: Error, CustomStringConvertible {
    public let description: String
}
