import CaptureTesting
import Foundation
import Glibc
import Testing

/// `[cluster]` as users run it: two `vigil run` processes share one configuration file and one
/// PostgreSQL (started here), each named by `VIGIL_NODE`; a camera pinned to a node (`node =`)
/// is recorded by that node only; `vigil cluster status` lists both with their cameras, and says
/// so (exit 1) when the database is away, while both go on recording.
@Suite(.serialized, .timeLimit(.minutes(4))) struct ClusterRunTests {
    @Test func twoNodesShareOneFileRecordTheirPinnedCamerasAndAreListed() async throws {
        let server = try TestPostgres()
        defer { server.stop() }
        let dir = try TemporaryDirectory("vigil-cluster-run")
        defer { dir.remove() }
        let file = dir.path + "/vigil.toml"
        try """
            [http]
            listen = ""
            [cluster]
            database = "postgresql://\(server.user)@127.0.0.1:\(server.port)/postgres"
            lease_seconds = 3
            [cameras.porch]
            device = "synthetic-0"
            size = "160x120"
            fps = 10
            node = "node-a"
            [cameras.yard]
            device = "synthetic-1"
            size = "160x120"
            fps = 10
            node = "node-b"
            [[record]]
            camera = "porch"
            segment_seconds = 1
            [[record]]
            camera = "yard"
            segment_seconds = 1
            """.write(toFile: file, atomically: true, encoding: .utf8)
        // check-config asks the database: it answers (no node yet); a role it does not know is an error at [cluster].
        let checked = VigilBinary.run(["check-config", file])
        #expect(checked.status == 0 && checked.output.contains("cluster: postgresql://\(server.user)@127.0.0.1:\(server.port)/postgres answers; 0 node(s) registered"),
                "\(checked.output)\(checked.errorOutput)")
        let wrongUser = dir.path + "/wrong-user.toml"
        try String(contentsOfFile: file, encoding: .utf8).replacingOccurrences(of: "postgresql://\(server.user)@", with: "postgresql://nobody@")
            .write(toFile: wrongUser, atomically: true, encoding: .utf8)
        let refused = VigilBinary.run(["check-config", wrongUser])
        #expect(refused.status == 1 && refused.errorOutput.contains("wrong-user.toml:3: error: the cluster database") && refused.errorOutput.contains("refuses this check"),
                "\(refused.output)\(refused.errorOutput)")
        var nodes: [(name: String, dir: String, process: Process)] = []
        defer { for node in nodes where node.process.isRunning { kill(node.process.processIdentifier, SIGKILL) } }
        for name in ["node-a", "node-b"] {
            let home = dir.path + "/" + name
            try FileManager.default.createDirectory(atPath: home, withIntermediateDirectories: true)
            let process = try VigilBinary.start(["run", "--config", file, "--data", home + "/data"], in: home, environment: ["VIGIL_NODE": name])
            nodes.append((name, home, process))
        }

        // Both listed, each with the camera pinned to it; the text form says the same.
        var listed: [[String: Any]] = []
        let found = await waitUntil(seconds: 60) {
            let status = VigilBinary.run(["cluster", "status", "--config", file, "--json"])
            guard status.status == 0, let json = try? JSONSerialization.jsonObject(with: Data(status.output.utf8)) as? [String: Any],
                  let list = json["nodes"] as? [[String: Any]] else { return false }
            listed = list
            return list.count == 2 && list.allSatisfy { ($0["cameras"] as? [String])?.count == 1 }
        }
        try #require(found, "\(listed)\n\(nodes.map { VigilBinary.output(in: $0.dir) })")
        #expect(listed.map { $0["node"] as? String } == ["node-a", "node-b"])
        #expect(listed.map { $0["cameras"] as? [String] } == [["porch"], ["yard"]])
        #expect(listed.allSatisfy { $0["alive"] as? Bool == true })
        let text = VigilBinary.run(["cluster", "status", "--config", file])
        #expect(text.status == 0 && text.output.contains("2 node(s)") && text.output.contains("node-a") && text.output.contains("records 1 (porch)"),
                "\(text.output)\(text.errorOutput)")

        // Each node's disk holds its own camera only.
        #expect(await waitUntil(seconds: 30) {
            nodes.allSatisfy { !RecordingInspector.files(under: $0.dir + "/data", endingWith: ".mp4").isEmpty }
        })
        for (node, camera, other) in [(nodes[0], "porch", "yard"), (nodes[1], "yard", "porch")] {
            let files = RecordingInspector.files(under: node.dir + "/data", endingWith: ".mp4")
            #expect(files.allSatisfy { $0.contains("/\(camera)/") } && !files.contains { $0.contains("/\(other)/") }, "\(node.name): \(files)")
        }

        // The database away: the command says so and exits 1; both nodes keep recording.
        server.pause()
        let counts = nodes.map { RecordingInspector.files(under: $0.dir + "/data", endingWith: ".mp4").count }
        let away = VigilBinary.run(["cluster", "status", "--config", file])
        #expect(away.status == 1 && away.errorOutput.contains("is not answering"), "\(away.output)\(away.errorOutput)")
        #expect(await waitUntil(seconds: 20) {
            zip(nodes, counts).allSatisfy { RecordingInspector.files(under: $0.dir + "/data", endingWith: ".mp4").count >= $1 + 3 }
        }, "recording went on without the database")
        server.resume()
        for node in nodes {
            #expect(node.process.isRunning, "\(node.name) stopped: \(VigilBinary.output(in: node.dir).suffix(2000))")
            kill(node.process.processIdentifier, SIGTERM)
            #expect(await waitForExit(node.process, seconds: 30) && node.process.terminationStatus == 0)
            let log = VigilBinary.output(in: node.dir)
            #expect(log.contains("joined the cluster") && log.contains("as node \(node.name)"), "\(log.suffix(2000))")
            #expect(log.contains("is not answering"), "the outage was said: \(log.suffix(2000))")
            for path in RecordingInspector.files(under: node.dir + "/data", endingWith: ".mp4") {
                #expect(RecordingInspector.ffprobeProblem(path) == nil, "\(path)")
            }
        }
    }

    /// The video files under `dir`, whatever container the camera's codec went into.
    private func recordings(under dir: String) -> [String] {
        RecordingInspector.files(under: dir, endingWith: ".mp4") + RecordingInspector.files(under: dir, endingWith: ".mkv")
    }

    /// `vigil cluster status --json`'s nodes, or nil when it does not answer.
    private func listedNodes(_ file: String) -> [(name: String, cameras: [String], alive: Bool)]? {
        let status = VigilBinary.run(["cluster", "status", "--config", file, "--json"])
        guard status.status == 0, let json = try? JSONSerialization.jsonObject(with: Data(status.output.utf8)) as? [String: Any],
              let list = json["nodes"] as? [[String: Any]] else { return nil }
        return list.map { ($0["node"] as? String ?? "", $0["cameras"] as? [String] ?? [], $0["alive"] as? Bool ?? false) }
    }

    /// Six network cameras shared by three nodes: each recorded by exactly one node, two each;
    /// a node killed with kill -9 has its cameras recorded again by the others within the
    /// lease and 5 s; started again, it takes its share back, slowly.
    @Test func sixNetworkCamerasAreSharedByThreeNodesAndAKilledNodesCamerasMove() async throws {
        let server = try TestPostgres()
        defer { server.stop() }
        let cameras = try (0..<6).map { _ in try LoopbackCameraServer.rtsp(size: "160x120", fps: 10) }
        defer { for camera in cameras { camera.stop() } }
        let dir = try TemporaryDirectory("vigil-cluster-leases")
        defer { dir.remove() }
        let lease = 4.0
        let file = dir.path + "/vigil.toml"
        try ("""
            [http]
            listen = ""
            [cluster]
            database = "postgresql://\(server.user)@127.0.0.1:\(server.port)/postgres"
            lease_seconds = \(Int(lease))

            """ + cameras.enumerated().map { i, camera in
                "[cameras.cam\(i)]\nurl = \"\(camera.url())\"\n[[record]]\ncamera = \"cam\(i)\"\ncodec = \"copy\"\nsegment_seconds = 1\n"
            }.joined(separator: "\n")).write(toFile: file, atomically: true, encoding: .utf8)
        var nodes: [String: (dir: String, process: Process)] = [:]
        defer { for node in nodes.values where node.process.isRunning { kill(node.process.processIdentifier, SIGKILL) } }
        func start(_ name: String) throws {
            let home = dir.path + "/" + name
            try FileManager.default.createDirectory(atPath: home, withIntermediateDirectories: true)
            let process = try VigilBinary.start(["run", "--config", file, "--data", home + "/data"], in: home, environment: ["VIGIL_NODE": name])
            nodes[name] = (home, process)
        }
        for name in ["node-a", "node-b", "node-c"] { try start(name) }
        let all = Set((0..<6).map { "cam\($0)" })

        // Steady state: every camera held by exactly one live node, two each.
        var listed: [(name: String, cameras: [String], alive: Bool)] = []
        let shared = await waitUntil(seconds: 90) {
            listed = listedNodes(file) ?? []
            let held = listed.filter(\.alive).flatMap(\.cameras)
            return listed.count == 3 && held.count == 6 && Set(held) == all && listed.allSatisfy { $0.cameras.count == 2 }
        }
        try #require(shared, "\(listed)\n\(nodes.values.map { VigilBinary.output(in: $0.dir).suffix(1500) })")

        // kill -9 a node: its cameras are recorded again elsewhere within the lease and 5 s.
        let victim = "node-a"
        let moved = Set(listed.first { $0.name == victim }!.cameras)
        kill(nodes[victim]!.process.processIdentifier, SIGKILL)
        let killedAt = ContinuousClock.now
        let movedInTime = await waitUntil(seconds: lease + 5) {
            let now = listedNodes(file) ?? []
            let held = Set(now.filter { $0.name != victim && $0.alive }.flatMap(\.cameras))
            return moved.isSubset(of: held)
        }
        let took = ContinuousClock.now - killedAt
        print("kill -9 of \(victim): its cameras \(moved.sorted()) were held elsewhere after \(took)")
        #expect(movedInTime, "\(victim)'s cameras \(moved.sorted()) were not taken within \(lease + 5) s: \(listedNodes(file) ?? [])")
        // And recorded there: a new file of each on a surviving node's disk.
        let before = Date()
        let recorded = await waitUntil(seconds: 20) {
            moved.allSatisfy { camera in
                ["node-b", "node-c"].contains { name in
                    recordings(under: nodes[name]!.dir + "/data/\(camera)").contains {
                        ((try? FileManager.default.attributesOfItem(atPath: $0)[.modificationDate] as? Date) ?? .distantPast) > before
                    }
                }
            }
        }
        #expect(recorded, "the moved cameras were not recorded by the surviving nodes")

        // Started again, the node takes its share back, one camera at a time.
        try start(victim)
        let rebalanced = await waitUntil(seconds: 90) {
            let now = listedNodes(file) ?? []
            let held = now.filter(\.alive).flatMap(\.cameras)
            return held.count == 6 && Set(held) == all && now.count == 3 && now.allSatisfy { $0.cameras.count == 2 }
        }
        #expect(rebalanced, "\(listedNodes(file) ?? [])")

        for (name, node) in nodes where node.process.isRunning {
            kill(node.process.processIdentifier, SIGTERM)
            #expect(await waitForExit(node.process, seconds: 30) && node.process.terminationStatus == 0, "\(name)")
        }
        // Every file of every node decodes.
        for node in nodes.values {
            for path in recordings(under: node.dir + "/data") {
                #expect(RecordingInspector.ffprobeProblem(path) == nil, "\(path)")
            }
        }
    }
}
