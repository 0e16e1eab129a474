import CaptureTesting
import Cluster
import Foundation
import Logging
import PostgresNIO
import Recorder
import ServiceLifecycle
import Synchronization
import Testing

/// Nodes joining the cluster as `vigil run` does it (`ClusterService`), against a real PostgreSQL:
/// registration, heartbeats by the database's clock, a second process under the same name, and
/// a database that stops answering and comes back.
@Suite(.serialized, .timeLimit(.minutes(3))) struct NodeRegistryTests {
    /// `[cluster]` for a new database of its own on `server`.
    private func settings(_ server: TestPostgres, node: String, lease: Int = 3) throws -> ClusterSettings {
        let name = "n_" + UUID().uuidString.lowercased().replacingOccurrences(of: "-", with: "")
        try server.psql("CREATE DATABASE \(name)")
        var settings = ClusterSettings(database: try ClusterDatabaseURL("postgresql://\(server.user)@127.0.0.1:\(server.port)/\(name)"), node: node)
        settings.leaseSeconds = lease
        return settings
    }

    /// Runs `service` until `body` returns, then stops it.
    private func running<T: Sendable>(_ services: [any Service], _ body: () async throws -> T) async throws -> T {
        let group = ServiceGroup(configuration: .init(services: services, logger: Logger(label: "test")))
        let run = Task { try await group.run() }
        defer { run.cancel() }
        let result = try await body()
        await group.triggerGracefulShutdown()
        try await run.value
        return result
    }

    private func nodes(_ settings: ClusterSettings) async throws -> [NodeRegistry.Node] {
        let client = PostgresClient(configuration: settings.clientConfiguration())
        let run = Task { await client.run() }
        defer { run.cancel() }
        return try await withDeadline(.seconds(2), "listing the nodes") { try await NodeRegistry(client: client).nodes() }
    }

    @Test func twoNodesRegisterAndTheirHeartbeatsStayFresh() async throws {
        let server = try TestPostgres.shared()
        let a = try settings(server, node: "node-a")
        var b = a
        b.node = "node-b"
        let services: [any Service] = [
            ClusterService(settings: a, url: "http://127.0.0.1:1") { ["porch", "gate"] },
            ClusterService(settings: b, url: "http://127.0.0.1:2") { ["yard"] },
        ]
        let listed = try await running(services) { () async throws -> [NodeRegistry.Node] in
            var listed: [NodeRegistry.Node] = []
            // Past two heartbeats (a third of 3 s each): the ages stay under one. Looked at until
            // both are fresh at once: on a busy machine one beat may come late now and then, while
            // a node that stopped beating never is again.
            let deadline = ContinuousClock.now + .seconds(20)
            while ContinuousClock.now < deadline {
                listed = (try? await nodes(a)) ?? []
                if listed.count == 2, listed.allSatisfy({ $0.upSeconds > 2.5 && $0.heartbeatAgeSeconds < 1.5 }) { break }
                try await Task.sleep(for: .milliseconds(200))
            }
            return listed
        }
        try #require(listed.count == 2, "\(listed)")
        #expect(listed.map(\.name) == ["node-a", "node-b"])
        #expect(listed[0].cameras == ["porch", "gate"] && listed[1].cameras == ["yard"])
        #expect(listed[0].url == "http://127.0.0.1:1")
        for node in listed {
            #expect(node.upSeconds > 2.5 && node.heartbeatAgeSeconds < 1.5, "\(node): the heartbeat is renewed every third of the lease")
        }
    }

    @Test func aSecondProcessUnderTheSameNameTakesItOverAndTheFirstStopsBeating() async throws {
        let server = try TestPostgres.shared()
        let a = try settings(server, node: "node-a")
        let first = ClusterService(settings: a, url: "http://first") { [] }
        let second = ClusterService(settings: a, url: "http://second") { [] }
        try await running([first]) {
            #expect(await waitUntil(seconds: 20) { ((try? await nodes(a)) ?? []).first?.url == "http://first" })
            // The second takes the name; the first's next heartbeat finds another incarnation,
            // and it stops beating (it must not take the name back) but keeps running.
            let listed = try await running([second]) { () async throws -> [NodeRegistry.Node] in
                #expect(await waitUntil(seconds: 20) { ((try? await nodes(a)) ?? []).first?.url == "http://second" })
                try await Task.sleep(for: .seconds(3))
                return try await nodes(a)
            }
            #expect(listed.map(\.url) == ["http://second"], "the first took its name back: \(listed)")
        }
    }

    @Test func aDatabaseThatStopsAnsweringDoesNotStopTheNodeAndItsHeartbeatsComeBack() async throws {
        let server = try TestPostgres()
        defer { server.stop() }
        let a = try settings(server, node: "node-a")
        let service = ClusterService(settings: a, url: "http://a") { ["porch"] }
        // A service that returned would end the group, and no heartbeat would come after the pause.
        try await running([service]) {
            #expect(await waitUntil(seconds: 20) { ((try? await nodes(a)) ?? []).count == 1 })
            server.pause()
            try await Task.sleep(for: .seconds(6))
            server.resume()
            let beating = await waitUntil(seconds: 30) {
                ((try? await nodes(a)) ?? []).first.map { $0.heartbeatAgeSeconds < 1.5 && $0.upSeconds > 8 } ?? false
            }
            #expect(beating, "heartbeats go on after the database answers again")
        }
    }
}
