import CaptureTesting
@testable import Cluster
import Foundation
@testable import Recorder
import Testing

/// A node's recordings reach the shared catalogue through the journal in its SQLite index: the
/// history it had before joining, every later change (added, finished, deleted), and what was
/// recorded while the database was away, once it answers again.
@Suite(.timeLimit(.minutes(2))) struct CatalogReplicatorTests {
    private static let io = CatalogBackend.io

    @Test func everyChangeReachesTheCatalogueAndTheJournalOutlastsAnOutage() async throws {
        let server = try TestPostgres()
        defer { server.stop() }
        let dir = try TemporaryDirectory("vigil-replicator")
        defer { dir.remove() }
        let index = try await Self.io.run { try RecordingIndex(root: dir.path) }
        let catalog = try await Self.io.run { try PostgresCatalog.inSchema("public", of: server, node: "node-a", deadline: .seconds(1)) }
        defer { catalog.close() }
        // Another node's row, which this node must leave alone.
        try await Self.io.run {
            let other = try PostgresCatalog.inSchema("public", of: server, node: "node-b")
            defer { other.close() }
            try other.put(segment("theirs", start: 500))
        }
        let replicator = CatalogReplicator(index: index) { catalog }
        func local() async throws -> [String] { try await Self.io.run { try index.entries(kinds: nil).map { "\($0.path) \($0.state)" } } }
        func shared() async throws -> [String] {
            try await Self.io.run { try catalog.all() }.filter { !$0.path.contains("theirs") }.map { "\($0.path) \($0.state)" }
        }

        // Recorded before the node joined: the journal, turned on, notes its history.
        try await Self.io.run {
            try index.put(segment("old", start: 1_000))
            try index.keepCatalogJournal(true)
            try index.put(segment("new", start: 2_000, state: .writing))
        }
        #expect(await Self.io.run { replicator.pass() } == 2)
        #expect(try await shared() == (try await local()))
        #expect(try await shared() == ["porch/video/old.mp4 complete", "porch/video/new.mp4 writing"])

        // Finished, deleted: the catalogue follows.
        try await Self.io.run {
            try index.setState(.complete, path: "porch/video/new.mp4")
            try index.remove(path: "porch/video/old.mp4")
        }
        #expect(await Self.io.run { replicator.pass() } == 2)
        #expect(try await shared() == ["porch/video/new.mp4 complete"])
        #expect(try await Self.io.run { try index.catalogChangesWaiting() } == 0)

        // The database away: the change waits in the index, and is written once it answers.
        server.pause()
        try await Self.io.run { try index.put(segment("during", start: 3_000)) }
        #expect(await Self.io.run { replicator.pass() } == 0)
        #expect(try await Self.io.run { try index.catalogChangesWaiting() } == 1)
        server.resume()
        #expect(await waitUntil(seconds: 30) { await Self.io.run { replicator.pass() } == 1 })
        #expect(try await shared() == (try await local()))
        #expect(try await Self.io.run { try index.catalogChangesWaiting() } == 0)
        #expect(try server.psql("SELECT count(*) FROM recordings WHERE node = 'node-b'") == "1\n", "node-b's row untouched")

        // Leaving the cluster drops the journal: a standalone index notes nothing.
        try await Self.io.run {
            try index.keepCatalogJournal(false)
            try index.put(segment("alone", start: 4_000))
        }
        #expect(throws: (any Error).self) { try index.catalogChangesWaiting() }
    }
}
