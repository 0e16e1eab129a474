import CaptureTesting
@testable import Cluster
import Foundation
import PostgresNIO
import Recorder
import Testing

/// One writer per camera across the site: an overlap of two nodes' files is a hand-over only
/// when the lease moved between those nodes by hand-over, near the overlap, and the overlap is
/// no longer than a hand-over lasts; every other overlap is named.
@Suite(.timeLimit(.minutes(2))) struct SiteAuditTests {
    private static let s: Int64 = 1_000_000_000
    private func file(_ node: String, _ from: Double, _ to: Double) -> SiteAudit.Segment {
        SiteAudit.Segment(node: node, path: "cam/video/\(node)-\(from).mp4", startNanos: Int64(from * 1e9), endNanos: Int64(to * 1e9))
    }
    private func move(_ from: String?, _ to: String?, _ kind: String, at: Double) -> SiteAudit.Move {
        SiteAudit.Move(from: from, to: to, kind: kind, atNanos: Int64(at * 1e9))
    }

    @Test func anOverlapIsAHandOverOnlyWithItsMove() {
        let a = [file("a", 0, 60), file("a", 60, 120)], b = [file("b", 119.7, 180)]
        let handOver = move("a", "b", "handover", at: 119.2)
        let found = SiteAudit.overlaps(of: a + b, moves: [handOver])
        #expect(found.count == 1 && found[0].isHandOver && found[0].earlier.node == "a" && found[0].later.node == "b")
        #expect(abs(found[0].seconds - 0.3) < 1e-6)
        // The giver's next segment, begun while it waits for the taker (its files roll over),
        // overlaps the taker's first: the same hand-over, the other way round.
        let rolled = SiteAudit.overlaps(of: a + [file("b", 119.7, 121), file("a", 120.1, 120.2)], moves: [handOver])
        #expect(rolled.map { "\($0.earlier.node)>\($0.later.node) \($0.isHandOver)" } == ["a>b true", "b>a true"])
        // No move, a move between other nodes, a failover, or a move an hour away: two writers.
        for moves in [[], [move("a", "c", "handover", at: 119.2)], [move("a", "b", "expired", at: 119.2)], [move("a", "b", "handover", at: 3700)]] {
            #expect(SiteAudit.overlaps(of: a + b, moves: moves).map(\.isHandOver) == [false], "\(moves)")
        }
        // Longer than a hand-over lasts: two writers, whatever the move says.
        let long = SiteAudit.overlaps(of: a + [file("b", 100, 180)], moves: [move("a", "b", "handover", at: 99)])
        #expect(long.map(\.isHandOver) == [false] && abs(long[0].seconds - 20) < 1e-6)
        // Files that touch end to end, or follow after a gap, are no overlap.
        #expect(SiteAudit.overlaps(of: a + [file("b", 125, 180)], moves: []).isEmpty)
        // One node's two files at once: never a hand-over.
        #expect(SiteAudit.overlaps(of: [file("a", 0, 60), file("a", 30, 90)], moves: [move("a", "a", "restart", at: 30)]).map(\.isHandOver) == [false])
        // A file inside a long one is compared with the long one, not the last begun.
        let inside = SiteAudit.overlaps(of: [file("a", 0, 100), file("b", 10, 20), file("c", 30, 40)], moves: [])
        #expect(inside.map { "\($0.earlier.node)>\($0.later.node)" } == ["a>b", "a>c"])
        // A file is compared with every file still running at its start: a hand-over's partner
        // does not hide one node's second file at once.
        let both = SiteAudit.overlaps(of: [file("a", 0, 100), file("b", 95, 160), file("a", 97, 99)], moves: [move("a", "b", "handover", at: 94)])
        #expect(both.map { "\($0.earlier.node)>\($0.later.node) \($0.isHandOver)" } == ["a>b true", "a>a false", "b>a true"])
    }

    /// The trigger of schema step 10 notes each change of holder with its kind; `read` finds a
    /// camera's segments and moves, and a hand-over's overlap is told from two writers.
    @Test func leaseMovesAreNotedByTheDatabaseAndReadBack() async throws {
        let server = try TestPostgres()
        defer { server.stop() }
        let catalog = try await CatalogBackend.io.run { try PostgresCatalog.inSchema("public", of: server, node: "a") }
        defer { catalog.close() }
        try server.psql("""
            INSERT INTO camera_leases (camera) VALUES ('cam');
            UPDATE camera_leases SET owner = 'a', incarnation = '1', epoch = epoch + 1 WHERE camera = 'cam';
            UPDATE camera_leases SET offered = now() WHERE camera = 'cam';
            UPDATE camera_leases SET owner = 'b', incarnation = '2', epoch = epoch + 1, offered = NULL WHERE camera = 'cam';
            UPDATE camera_leases SET owner = 'c', incarnation = '3', epoch = epoch + 1 WHERE camera = 'cam';
            UPDATE camera_leases SET incarnation = '4', epoch = epoch + 1 WHERE camera = 'cam';
            UPDATE camera_leases SET owner = NULL, incarnation = NULL WHERE camera = 'cam';
            UPDATE camera_leases SET expires = now() WHERE camera = 'cam';
            """)
        let nowNanos = Int64(Date().timeIntervalSince1970 * 1e9)
        let segments = [("a", "1", nowNanos - 60 * Self.s, nowNanos + Self.s / 2), ("b", "2", nowNanos, nowNanos + 60 * Self.s)]
        try await CatalogBackend.io.run {
            for (node, name, start, end) in segments {
                let other = try PostgresCatalog.inSchema("public", of: server, node: node)
                defer { other.close() }
                try other.put(segment(name, camera: "cam", start: start, end: end))
            }
        }
        let connection = try await ClusterSettings(database: try ClusterDatabaseURL(server.url), node: "a").connect(timeout: .seconds(10))
        defer { Task { try? await connection.close() } }
        #expect(try await SiteAudit.cameras(on: connection) == ["cam"])
        let (read, moves) = try await SiteAudit.read("cam", on: connection, from: 0, to: nowNanos + 120 * Self.s)
        #expect(read.map(\.path) == ["cam/video/1.mp4", "cam/video/2.mp4"])
        #expect(moves.map { "\($0.from ?? "-")>\($0.to ?? "-") \($0.kind)" } == ["->a free", "a>b handover", "b>c expired", "c>c restart", "c>- given"])
        #expect(moves.allSatisfy { abs($0.atNanos - nowNanos) < 60 * Self.s }, "the moves' times are the database's clock, now")
        // a's file overlaps b's by half a second, right after the hand-over: one writer.
        #expect(SiteAudit.overlaps(of: read, moves: moves).map(\.isHandOver) == [true])
    }
}
