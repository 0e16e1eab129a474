import Foundation
import Logging
import PostgresNIO
import Recorder

/// The cluster's nodes, as the `cluster_nodes` table lists them: each node registers at start
/// with a new incarnation, then renews its heartbeat (judged by the database server's clock,
/// never a node's) with the cameras it records. Async: its callers are services and commands.
public struct NodeRegistry: Sendable {
    let client: PostgresClient
    private static let logger = Logger(label: "vigil.cluster")

    /// One node as the table says, with ages measured by the database's clock.
    public struct Node: Sendable, Equatable {
        public var name: String
        /// Where its page and API answer.
        public var url: String
        public var heartbeatAgeSeconds: Double
        public var upSeconds: Double
        /// The cameras it recorded at its last heartbeat.
        public var cameras: [String]
        /// How long ago it stopped cleanly (nil: it runs, or it was killed).
        public var stoppedAgeSeconds: Double? = nil

        /// Its heartbeat is within `leaseSeconds` and it did not stop.
        public func isAlive(leaseSeconds: Double) -> Bool { stoppedAgeSeconds == nil && heartbeatAgeSeconds <= leaseSeconds }
    }

    public init(client: PostgresClient) { self.client = client }

    /// Puts this node in the table under a new incarnation (a restart replaces the old one).
    public func register(node: String, incarnation: UUID, url: String, cameras: [String]) async throws {
        try await run("""
            INSERT INTO cluster_nodes (node, incarnation, url, started, heartbeat, cameras)
            VALUES (\(node), \(incarnation.uuidString), \(url), clock_timestamp(), clock_timestamp(), \(cameras))
            ON CONFLICT (node) DO UPDATE SET incarnation = EXCLUDED.incarnation, url = EXCLUDED.url, started = EXCLUDED.started,
                heartbeat = EXCLUDED.heartbeat, cameras = EXCLUDED.cameras, stopped = NULL
            """)
    }

    /// Marks this node's incarnation stopped cleanly (no longer live, so the others' share grows),
    /// recording `cameras` (those it still hands over; none once it has).
    public func stopped(node: String, incarnation: UUID, cameras: [String]) async throws {
        try await run("""
            UPDATE cluster_nodes SET stopped = clock_timestamp(), cameras = \(cameras)
            WHERE node = \(node) AND incarnation = \(incarnation.uuidString)
            """)
    }

    /// Renews this node's heartbeat; false when another process registered under its name since.
    public func heartbeat(node: String, incarnation: UUID, cameras: [String]) async throws -> Bool {
        var renewed = 0
        let rows = try await client.query("""
            UPDATE cluster_nodes SET heartbeat = clock_timestamp(), cameras = \(cameras)
            WHERE node = \(node) AND incarnation = \(incarnation.uuidString) RETURNING 1
            """, logger: Self.logger)
        for try await _ in rows { renewed += 1 }
        return renewed > 0
    }

    /// Every node, by name.
    public func nodes() async throws -> [Node] {
        try await client.withConnection { try await Self.nodes(on: $0) }
    }

    /// Every node, by name, on one connection (a command's). Rows are checked: a node name out of
    /// shape or an age that is no number is refused, not used.
    public static func nodes(on connection: PostgresConnection) async throws -> [Node] {
        // A database no node has joined yet has no table: no nodes, not an error. `stopped` is
        // read through the row's JSON so that a schema not yet at version 9 lists its nodes too.
        for try await exists in try await connection.query("SELECT to_regclass('cluster_nodes') IS NOT NULL", logger: logger).decode(Bool.self) where !exists {
            return []
        }
        let rows = try await connection.query("""
            SELECT node, url, EXTRACT(EPOCH FROM clock_timestamp() - heartbeat)::float8, EXTRACT(EPOCH FROM clock_timestamp() - started)::float8, cameras,
                   EXTRACT(EPOCH FROM clock_timestamp() - (to_jsonb(n) ->> 'stopped')::timestamptz)::float8
            FROM cluster_nodes n ORDER BY node LIMIT 10000
            """, logger: logger)
        var nodes: [Node] = []
        for try await (name, url, heartbeat, up, cameras, stopped) in rows.decode((String, String, Double, Double, [String], Double?).self) {
            guard NodeName.isValid(name), heartbeat.isFinite, up.isFinite, stopped?.isFinite ?? true, url.utf8.count <= 2048, cameras.count <= 10_000 else {
                throw CatalogError.invalidRow("cluster_nodes: node \(name.prefix(80))")
            }
            nodes.append(Node(name: name, url: url, heartbeatAgeSeconds: heartbeat, upSeconds: up, cameras: cameras, stoppedAgeSeconds: stopped))
        }
        return nodes
    }

    private func run(_ query: PostgresQuery) async throws {
        for try await _ in try await client.query(query, logger: Self.logger) {}
    }
}
