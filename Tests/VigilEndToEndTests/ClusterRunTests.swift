import CaptureTesting
import Foundation
import Glibc
import Recorder
import Testing

/// `[cluster]` as users run it: two `vigil run` processes share one configuration file and one
/// PostgreSQL (started here), each named by `VIGIL_NODE`; a camera pinned to a node (`node =`)
/// is recorded by that node only; `vigil cluster status` lists both with their cameras, and says
/// so (exit 1) when the database is away, while both go on recording.
@Suite(.serialized, .timeLimit(.minutes(8))) struct ClusterRunTests {
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
        try expectCheckConfigAsksTheDatabase(file: file, server: server, dir: dir.path)
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
        for node in nodes { await expectStopsCleanlyAfterTheOutage(node) }
    }

    /// A node of the outage test, stopped with SIGTERM: it exits 0, said it joined and that the
    /// database was away, and every file it wrote decodes.
    private func expectStopsCleanlyAfterTheOutage(_ node: (name: String, dir: String, process: Process)) async {
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

    /// `check-config` asks the database (it answers, no node yet), notes a node the others cannot
    /// reach, and makes a role the server does not know an error at `[cluster]`.
    private func expectCheckConfigAsksTheDatabase(file: String, server: TestPostgres, dir: String) throws {
        // check-config asks the database: it answers (no node yet); a role it does not know is an error at [cluster].
        let checked = VigilBinary.run(["check-config", file])
        #expect(checked.status == 0 && checked.output.contains("cluster: postgresql://\(server.user)@127.0.0.1:\(server.port)/postgres answers; 0 node(s) registered"),
                "\(checked.output)\(checked.errorOutput)")
        // No web server: the other nodes can neither fetch this one's files nor ask it (the fence).
        #expect(checked.output.contains("note: [cluster] with no web server ([http] listen = \"\"): other nodes cannot fetch"), "\(checked.output)")
        // A node on loopback while the database, and so the other nodes, are elsewhere: the same note.
        let remote = dir + "/remote.toml"
        try String(contentsOfFile: file, encoding: .utf8)
            .replacingOccurrences(of: "127.0.0.1:\(server.port)", with: "db.example.net")
            .replacingOccurrences(of: "listen = \"\"", with: "listen = \"127.0.0.1:8080\"")
            .write(toFile: remote, atomically: true, encoding: .utf8)
        let elsewhere = VigilBinary.run(["check-config", "--no-probe", remote])
        #expect(elsewhere.status == 0 && elsewhere.output.contains("note: [http] listen 127.0.0.1:8080 is loopback while the cluster database is on db.example.net: other nodes cannot fetch"),
                "\(elsewhere.output)\(elsewhere.errorOutput)")
        let wrongUser = dir + "/wrong-user.toml"
        try String(contentsOfFile: file, encoding: .utf8).replacingOccurrences(of: "postgresql://\(server.user)@", with: "postgresql://nobody@")
            .write(toFile: wrongUser, atomically: true, encoding: .utf8)
        let refused = VigilBinary.run(["check-config", wrongUser])
        #expect(refused.status == 1 && refused.errorOutput.contains("wrong-user.toml:3: error: the cluster database") && refused.errorOutput.contains("refuses this check"),
                "\(refused.output)\(refused.errorOutput)")
    }

    /// Every node's API lists the site: the six cameras, each with the node that records it, and
    /// a camera's recordings from every node; another node's recording plays through this node
    /// (forwarded to the node that holds it), whole and by range; another node's motion events
    /// are reviewed on this node's page (`ClusterRunTests+Events`).
    @Test func everyNodesAPIListsTheWholeSiteAndPlaysAnotherNodesRecordings() async throws {
        let site = try await LeasedSite()
        defer { site.remove() }
        let holders = Dictionary(uniqueKeysWithValues: site.listed.flatMap { node in node.cameras.map { ($0, node.name) } })
        for name in site.nodes.keys.sorted() {
            var last: [String: String] = [:]
            let listsAll = await waitUntil(seconds: 20) {
                let cameras = site.api(name, "/api/v1/cameras")?["cameras"] as? [[String: Any]] ?? []
                last = Dictionary(cameras.map { ($0["name"] as? String ?? "?", $0["node"] as? String ?? "?") }) { a, _ in a }
                return last == holders
            }
            #expect(listsAll, "\(name)'s API lists \(last), the site is \(holders)")
        }
        // A camera node-b records, as node-a's API lists it: node-b's recordings, with their node.
        let (camera, holder) = try #require(holders.sorted { $0.key < $1.key }.first { $0.value != "node-a" })
        var recording: [String: Any] = [:]
        let listed = await waitUntil(seconds: 20) {
            let list = site.api("node-a", "/api/v1/cameras/\(camera)/recordings?from=2000-01-01T00:00:00Z&to=2100-01-01T00:00:00Z")
            guard list?["partial"] as? Bool == false, let recordings = list?["recordings"] as? [[String: Any]],
                  let found = recordings.last(where: { $0["node"] as? String == holder }) else { return false }
            recording = found
            return true
        }
        try #require(listed, "node-a's API never listed \(camera)'s recordings from \(holder)")
        let url = try #require(recording["url"] as? String)
        let bytes = try #require(recording["bytes"] as? Int)
        #expect(url.hasPrefix("/api/v1/cluster/recordings/"), "\(url)")
        // Played through node-a: node-b's bytes, whole, then a range.
        let whole = try #require(httpGetBytes(port: site.ports["node-a"]!, url))
        let (head, body) = split(whole)
        #expect(head.hasPrefix("HTTP/1.1 200"), "\(head)")
        #expect(body.count == bytes, "\(body.count) bytes of \(bytes)")
        let onDisk = site.nodes[holder]!.dir + "/data/" + camera
        let file = try #require(RecordingInspector.files(under: onDisk, endingWith: ".mp4").first { (try? Data(contentsOf: URL(fileURLWithPath: $0))) == Data(body) },
                                "the bytes are not those of a file of \(camera) on \(holder)'s disk")
        #expect(RecordingInspector.ffprobeProblem(file) == nil)
        let part = try #require(httpGetBytes(port: site.ports["node-a"]!, url, headers: ["Range: bytes=0-99"]))
        let (partHead, partBody) = split(part)
        #expect(partHead.hasPrefix("HTTP/1.1 206") && partHead.lowercased().contains("content-range: bytes 0-99/\(bytes)"), "\(partHead)")
        #expect(partBody == Array(body.prefix(100)))
        // Its live view through node-a, by the codec of its recordings on its node.
        let listedThere = (site.api("node-a", "/api/v1/cameras")?["cameras"] as? [[String: Any]] ?? []).first { $0["name"] as? String == camera }
        #expect(listedThere?["live_mp4"] as? String == "/api/v1/cluster/cameras/\(camera)/live" && listedThere?["codec"] as? String == "h264",
                "\(listedThere ?? [:])")
        // The camera's picture too, from its node.
        let snapshot = try #require(httpGetBytes(port: site.ports["node-a"]!, "/api/v1/cluster/cameras/\(camera)/snapshot.jpg"))
        #expect(split(snapshot).head.hasPrefix("HTTP/1.1 200") && split(snapshot).body.starts(with: [0xFF, 0xD8]), "\(split(snapshot).head)")
        // A node that never recorded the camera lists the holder's motion events and marks them.
        let page = try #require(site.nodes.keys.sorted().first { $0 != holder && site.recordings(of: $0, camera: camera).isEmpty },
                                "every node recorded \(camera) at some time")
        let events = try await expectEventsOfAnotherNode(site: site, page: page, holder: holder, camera: camera, picture: split(snapshot).body)
        // The page, in headless Chromium: it shows every camera of the site, says which node
        // records it, plays its recording from that node, and reviews the holder's events.
        let report = try await BrowserCheck.run(
            "cluster_check.py", url: "http://127.0.0.1:\(site.ports[page]!)", size: "desktop",
            arguments: [site.all.sorted().joined(separator: ","), camera, holder, String(events.last ?? 0)])
        BrowserCheck.expect(
            report, required: [
                "cluster-grid", "cluster-node-shown", "cluster-grid-axe", "cluster-plays", "cluster-live", "cluster-review-listed", "cluster-review-picture",
                "cluster-review-marked", "cluster-no-error", "cluster-console",
            ],
            size: "desktop")
        print("\(page)'s page: \(report.checks.map { "\($0.name): \($0.detail)" }.joined(separator: "\n"))")
        let reviewed = try RecordingIndex(root: site.nodes[holder]!.dir + "/data").motionEvents(camera: camera).filter { $0.reviewedNanos != nil }
        #expect(reviewed.count == 1, "the page's mark reached \(holder)'s index: \(reviewed)")
        await expectAMarkOfADeadNodesEvent(site: site, page: page, holder: holder, id: events.first ?? 0)
        try await site.stopAll()
    }

    /// With `[archive]`, each node uploads into its own folder of the bucket (`site/NODE/…`), and
    /// when the node that holds a recording is killed, another node serves it from that folder.
    @Test func aKilledNodesRecordingIsServedFromItsFolderOfTheArchive() async throws {
        let s3 = try await S3TestServer()
        defer { s3.stop() }
        let folder = try TemporaryDirectory("vigil-cluster-s3")
        defer { folder.remove() }
        let credentials = folder.path + "/s3"
        try "[default]\naws_access_key_id = \(s3.keys.accessKeyID)\naws_secret_access_key = \(s3.keys.secretAccessKey)\n"
            .write(toFile: credentials, atomically: true, encoding: .utf8)
        chmod(credentials, 0o600)
        let site = try await LeasedSite(extra: """
            [archive]
            url = "s3://\(s3.bucket)/site"
            endpoint = "\(s3.endpointURL)"
            credentials_file = "\(credentials)"
            """)
        defer { site.remove() }
        let holders = Dictionary(uniqueKeysWithValues: site.listed.flatMap { node in node.cameras.map { ($0, node.name) } })
        let (camera, holder) = try #require(holders.sorted { $0.key < $1.key }.first { $0.value != "node-a" })
        // A recording of the holder's in its folder of the bucket, and its row in the catalogue.
        var keys: [String] = []
        var row: [Substring] = []
        let archived = await waitUntil(seconds: 60) {
            keys = (try? await s3.listKeys()) ?? []
            guard let key = keys.last(where: { $0.hasPrefix("site/\(holder)/\(camera)/video/") }) else { return false }
            row = ((try? site.server.psql("SELECT id, bytes, path FROM recordings WHERE node = '\(holder)' AND path = '\(key.dropFirst("site/\(holder)/".count))' AND state = 'complete'")) ?? "")
                .split(separator: "\n").first?.split(separator: "|") ?? []
            return row.count == 3
        }
        try #require(archived, "no recording of \(camera) by \(holder) reached site/\(holder)/ in the bucket and the catalogue: \(keys.prefix(10))")
        #expect(keys.allSatisfy { ["node-a", "node-b", "node-c"].contains($0.split(separator: "/").dropFirst().first.map(String.init) ?? "") },
                "keys outside the nodes' folders: \(keys.filter { !$0.hasPrefix("site/node-") }.prefix(5))")
        let url = "/api/v1/cluster/recordings/\(row[0])/file"
        let bytes = try #require(Int(row[1]))
        let path = String(row[2])
        // The holder dies; node-a plays its recording from the bucket: the bytes of the holder's file.
        kill(site.nodes[holder]!.process.processIdentifier, SIGKILL)
        _ = await waitForExit(site.nodes[holder]!.process, seconds: 30)
        let whole = try #require(httpGetBytes(port: site.ports["node-a"]!, url))
        let (head, body) = split(whole)
        #expect(head.hasPrefix("HTTP/1.1 200"), "\(head)\n\(String(decoding: body.prefix(300), as: UTF8.self))")
        #expect(body.count == bytes, "\(body.count) bytes of \(bytes)")
        let file = site.nodes[holder]!.dir + "/data/" + path
        #expect((try? Data(contentsOf: URL(fileURLWithPath: file))) == Data(body), "not the bytes of \(file)")
        #expect(RecordingInspector.ffprobeProblem(file) == nil)
        let part = try #require(httpGetBytes(port: site.ports["node-a"]!, url, headers: ["Range: bytes=10-109"]))
        #expect(split(part).head.hasPrefix("HTTP/1.1 206") && split(part).body == Array(body[10...109]), "\(split(part).head)")
        try await site.stopAll()
    }

    /// An instant as the API writes it (RFC 3339 with milliseconds).
    static func instant(_ text: String) -> Date? {
        let format = ISO8601DateFormatter()
        format.formatOptions = [.withInternetDateTime, .withFractionalSeconds]
        return format.date(from: text)
    }

    /// An HTTP answer's head (as text) and body.
    private func split(_ answer: [UInt8]) -> (head: String, body: [UInt8]) {
        let separator: [UInt8] = [13, 10, 13, 10]
        guard let end = (0..<max(0, answer.count - 3)).first(where: { Array(answer[$0..<($0 + 4)]) == separator }) else {
            return (String(decoding: answer, as: UTF8.self), [])
        }
        return (String(decoding: answer[..<end], as: UTF8.self), Array(answer[(end + 4)...]))
    }
}

/// What the tests check of a `LeasedSite` (CaptureTesting) when it ends, and what they ask its nodes.
extension LeasedSite {
    /// `path` of `node`'s API as JSON, or nil when it does not answer 200.
    func api(_ node: String, _ path: String) -> [String: Any]? {
        guard let answer = httpGet(port: ports[node]!, path), answer.hasPrefix("HTTP/1.1 200"),
              let body = answer.components(separatedBy: "\r\n\r\n").dropFirst().first else { return nil }
        return try? JSONSerialization.jsonObject(with: Data(body.utf8)) as? [String: Any]
    }

    /// The nodes whose segments of `camera` `node`'s API lists.
    func recordingNodes(listedBy node: String, camera: String) -> Set<String> {
        let listing = api(node, "/api/v1/cameras/\(camera)/recordings?from=2000-01-01T00:00:00Z&to=2100-01-01T00:00:00Z") ?? [:]
        return Set((listing["recordings"] as? [[String: Any]] ?? []).compactMap { $0["node"] as? String })
    }

    /// For each switch of a camera from one node's files to another's (by the files' own frame
    /// times, from every node's index): the seconds between the last frame before it and the
    /// first frame after (negative: they overlap).
    func gapsAtMoves() throws -> [(camera: String, seconds: Double)] {
        var spans: [String: [(node: String, from: Int64, to: Int64)]] = [:]
        for (name, node) in nodes {
            for entry in try RecordingIndex(root: node.dir + "/data").entries(kind: .segment) {
                spans[entry.camera, default: []].append((name, entry.startNanos, entry.endNanos))
            }
        }
        var gaps: [(camera: String, seconds: Double)] = []
        for (camera, list) in spans {
            let sorted = list.sorted { $0.from < $1.from }
            var covered = sorted.first.map { ($0.node, $0.to) }
            for span in sorted.dropFirst() {
                guard let (node, to) = covered else { break }
                if span.node != node && span.to > to { gaps.append((camera, Double(span.from - to) / 1e9)) }
                if span.to > to { covered = (span.node, span.to) }
            }
        }
        return gaps
    }

    /// SIGTERM to every node still running: each exits 0.
    func stopAll() async throws {
        for (name, node) in nodes where node.process.isRunning {
            kill(node.process.processIdentifier, SIGTERM)
            #expect(await waitForExit(node.process, seconds: 30) && node.process.terminationStatus == 0, "\(name): \(VigilBinary.output(in: node.dir).suffix(2000))")
        }
    }

    /// The longest stretch in which two nodes both wrote one camera, from the nodes' own indexes
    /// (each file's first to last frame). `moved`: some camera was recorded by several nodes in
    /// turn (a test that moved cameras says so; where none had to move, none need have).
    func longestOverlap(moved: Bool = true) throws -> (seconds: Double, camera: String) {
        var longest = (seconds: 0.0, camera: "")
        var spans: [String: [(node: String, from: Int64, to: Int64)]] = [:]
        for (name, node) in nodes {
            let entries = try RecordingIndex(root: node.dir + "/data").entries(kind: .segment)
            #expect(!entries.isEmpty, "\(name)'s index lists no segment")
            let covered = entries.reduce(0.0) { $0 + Double($1.endNanos - $1.startNanos) / 1e9 }
            print("\(name): \(entries.count) segments in its index, \(String(format: "%.1f", covered)) s of footage")
            for entry in entries {
                spans[entry.camera, default: []].append((name, entry.startNanos, entry.endNanos))
            }
        }
        // Every camera was recorded, some by several nodes in turn when they moved.
        #expect(Set(spans.keys) == all && (!moved || spans.values.contains { Set($0.map(\.node)).count > 1 }), "\(spans.mapValues { Set($0.map(\.node)) })")
        for (camera, list) in spans {
            for a in list {
                for b in list where b.node > a.node {
                    let shared = Double(min(a.to, b.to) - max(a.from, b.from)) / 1e9
                    if shared > longest.seconds { longest = (shared, camera) }
                }
            }
        }
        return longest
    }

    func expectEveryFileDecodes() {
        for node in nodes.values {
            let dir = node.dir + "/data"
            for path in RecordingInspector.files(under: dir, endingWith: ".mp4") + RecordingInspector.files(under: dir, endingWith: ".mkv") {
                #expect(RecordingInspector.ffprobeProblem(path) == nil, "\(path)")
            }
        }
    }
}
