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
}
