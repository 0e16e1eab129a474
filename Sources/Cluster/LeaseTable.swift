import Logging
import PostgresNIO
import Recorder

/// The `camera_leases` table: for each network camera the nodes share, which node records it
/// (`owner` and its `incarnation`), until when (`expires`, the database server's clock), how
/// many times it changed hands (`epoch`, +1 at every take) and when it last did (`taken`). Every
/// statement decides by the server's clock and re-checks its condition under the row's lock, so
/// two nodes racing for one camera cannot both get it.
struct LeaseTable: Sendable {
    /// The node's client, started again after a call went unanswered.
    let connections: ReconnectingClient
    let node: String
    let incarnation: String
    let leaseSeconds: Double
    private static let logger = Logger(label: "vigil.cluster")
    private var client: PostgresClient { connections.client }

    /// One shared camera as the table has it, seen from this node.
    struct Row: Sendable, Equatable {
        var camera: String
        var owner: String?
        /// This node, in this process.
        var isMine: Bool
        /// This node's name, from an earlier process (restarted after kill -9).
        var isMineFromBefore: Bool
        /// Seconds until it expires (negative: expired); 0 when free.
        var expiresInSeconds: Double
        /// Its holder hands it over: it records on until the taker writes it.
        var isOffered = false
    }

    /// Where a node that hands a camera over tells the others (NOTIFY), so a taker's round comes
    /// at once, not a third of a lease later.
    static let channel = "vigil_leases"

    /// Renews the leases of `held`; returns those still this node's (the others were taken).
    func renew(_ held: [String]) async throws -> Set<String> {
        guard !held.isEmpty else { return [] }
        var renewed: Set<String> = []
        let rows = try await client.query("""
            UPDATE camera_leases SET expires = clock_timestamp() + make_interval(secs => \(leaseSeconds))
            WHERE owner = \(node) AND incarnation = \(incarnation) AND camera = ANY(\(held)) RETURNING camera
            """, logger: Self.logger)
        for try await camera in rows.decode(String.self) { renewed.insert(camera) }
        return renewed
    }

    /// Puts a row for each shared camera that has none yet (free).
    func offer(_ cameras: [String]) async throws {
        guard !cameras.isEmpty else { return }
        try await run("INSERT INTO camera_leases (camera) SELECT unnest(\(cameras)::text[]) ON CONFLICT (camera) DO NOTHING")
    }

    /// The shared cameras' rows; how many nodes are alive; and how many the site has known
    /// (alive, stopped or gone: any may come back). Alive: a heartbeat within a lease, not
    /// stopped, and no lease of a shared camera run out under its present incarnation. A node
    /// that sent a heartbeat after its last renewal still looked alive when its leases ran out,
    /// and kept the others' share too small to take them for a round (found by
    /// `bench-failover`); a row of a camera no longer shared, or from before a restart, says
    /// nothing of it.
    func state(of cameras: [String]) async throws -> (rows: [Row], liveNodes: Int, expectedNodes: Int) {
        var rows: [Row] = []
        let query = try await client.query("""
            SELECT camera, owner, COALESCE(owner = \(node) AND incarnation = \(incarnation), false),
                   COALESCE(owner = \(node) AND incarnation <> \(incarnation), false),
                   COALESCE(EXTRACT(EPOCH FROM expires - clock_timestamp())::float8, 0), offered IS NOT NULL
            FROM camera_leases WHERE camera = ANY(\(cameras)) ORDER BY camera
            """, logger: Self.logger)
        for try await (camera, owner, mine, mineBefore, expiresIn, offered) in query.decode((String, String?, Bool, Bool, Double, Bool).self) {
            guard expiresIn.isFinite, owner.map(NodeName.isValid) ?? true else {
                throw CatalogError.invalidRow("camera_leases: \(camera.prefix(80))")
            }
            rows.append(Row(camera: camera, owner: owner, isMine: mine, isMineFromBefore: mineBefore, expiresInSeconds: expiresIn, isOffered: offered))
        }
        var live = 0
        var expected = 0
        let count = try await client.query("""
            SELECT count(*) FILTER (WHERE stopped IS NULL AND heartbeat > clock_timestamp() - make_interval(secs => \(leaseSeconds))
                                          AND NOT EXISTS (SELECT FROM camera_leases l WHERE l.owner = n.node AND l.incarnation = n.incarnation
                                                          AND l.camera = ANY(\(cameras)) AND l.expires < clock_timestamp())),
                   count(*)
            FROM cluster_nodes n
            """, logger: Self.logger)
        for try await (n, all) in count.decode((Int64, Int64).self) {
            live = Int(clamping: max(0, n))
            expected = Int(clamping: max(0, all))
        }
        return (rows, live, expected)
    }

    /// Takes `camera` if it is free, this node's from an earlier process, offered by its holder,
    /// or (`expired`) a lease nobody renewed in time; returns its new epoch, nil when another
    /// node has it.
    func take(_ camera: String, expired: Bool) async throws -> Int64? {
        let rows = try await client.query("""
            UPDATE camera_leases SET owner = \(node), incarnation = \(incarnation), epoch = epoch + 1, taken = clock_timestamp(),
                expires = clock_timestamp() + make_interval(secs => \(leaseSeconds)), offered = NULL, recording = NULL
            WHERE camera = \(camera) AND (owner IS NULL OR (owner = \(node) AND incarnation <> \(incarnation)) OR offered IS NOT NULL
                OR (\(expired) AND expires < clock_timestamp()))
            RETURNING epoch
            """, logger: Self.logger)
        var epoch: Int64?
        for try await value in rows.decode(Int64.self) { epoch = value }
        return epoch
    }

    /// Offers `cameras` for another node to take while this one records on, and tells the others.
    func handOver(_ cameras: [String]) async throws {
        guard !cameras.isEmpty else { return }
        try await run("""
            UPDATE camera_leases SET offered = clock_timestamp()
            WHERE owner = \(node) AND incarnation = \(incarnation) AND camera = ANY(\(cameras))
            """)
        try await run("SELECT pg_notify(\(Self.channel), \(node))")
    }

    /// Takes the offer of `cameras` back (nobody took them): still this node's alone.
    func withdraw(_ cameras: [String]) async throws {
        guard !cameras.isEmpty else { return }
        try await run("""
            UPDATE camera_leases SET offered = NULL WHERE owner = \(node) AND incarnation = \(incarnation) AND camera = ANY(\(cameras))
            """)
    }

    /// The camera this node took by hand-over is in its files: its giver may stop.
    func recordingStarted(_ camera: String) async throws {
        try await run("""
            UPDATE camera_leases SET recording = clock_timestamp() WHERE camera = \(camera) AND owner = \(node) AND incarnation = \(incarnation)
            """)
    }

    /// For each of `cameras` this node offered: who holds it now (nil: this node still), and
    /// whether that node writes it already.
    func handOvers(_ cameras: [String]) async throws -> [String: (taker: String?, recording: Bool)] {
        var found: [String: (taker: String?, recording: Bool)] = [:]
        let rows = try await client.query("""
            SELECT camera, CASE WHEN owner = \(node) AND incarnation = \(incarnation) THEN NULL ELSE COALESCE(owner, '') END, recording IS NOT NULL
            FROM camera_leases WHERE camera = ANY(\(cameras))
            """, logger: Self.logger)
        for try await (camera, taker, recording) in rows.decode((String, String?, Bool).self) {
            guard taker.map({ $0.isEmpty || NodeName.isValid($0) }) ?? true else { throw CatalogError.invalidRow("camera_leases: \(camera.prefix(80))") }
            found[camera] = (taker, recording)
        }
        return found
    }

    /// Gives `cameras` up (free for any node to take at once), and tells the others.
    func give(_ cameras: [String]) async throws {
        guard !cameras.isEmpty else { return }
        try await run("""
            UPDATE camera_leases SET owner = NULL, incarnation = NULL, expires = NULL, offered = NULL
            WHERE owner = \(node) AND incarnation = \(incarnation) AND camera = ANY(\(cameras))
            """)
        try await run("SELECT pg_notify(\(Self.channel), \(node))")
    }

    private func run(_ query: PostgresQuery) async throws {
        for try await _ in try await client.query(query, logger: Self.logger) {}
    }
}
