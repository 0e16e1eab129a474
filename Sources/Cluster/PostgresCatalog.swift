import Logging
import Plumbing
import PostgresNIO
import Recorder

/// The recordings catalogue in PostgreSQL, shared by the nodes of a cluster (`[cluster]`, issue
/// 30): the same tables and columns as `RecordingIndex`'s SQLite file, plus the `node` that holds
/// each file, so one database lists every node's recordings. Writes are this node's only (rows
/// are keyed by `(node, path)` and `(node, camera, start_ns)`); reads span every node.
///
/// Synchronous like every `RecordingCatalog`: each method waits for PostgreSQL on the calling
/// thread, at most `deadline`, through `PostgresBridge`. Call it on a `BlockingIO` thread, never
/// from Swift's cooperative pool (refused with `CatalogError.calledFromSwiftConcurrency`).
///
/// Every value read back is checked (known kind and state, sizes and times in range) before a
/// caller does arithmetic with it: the database is outside this process.
public final class PostgresCatalog: RecordingCatalog {
    /// This node's name: the `node` of every row it writes.
    public let node: String
    /// Started again after a call went unanswered; closed by `close()`.
    private let database: ReconnectingClient
    private let bridge: PostgresBridge
    static let logger = Logger(label: "vigil.catalog")

    /// The schema this code writes. Its own count: steps 1–4 are SQLite's versions 1–4, later ones
    /// the cluster's own tables (and whatever SQLite's later versions need here).
    public static let schemaVersion = Int32(migrations.count)

    /// Any number, the same on every node: nodes starting together migrate one after the other.
    static let migrationLock: Int64 = 0x5649_4749_4C00  // "VIGIL"

    /// Connects with `configuration`, migrates the schema (refusing one from a newer Vigil), and
    /// is ready. `deadline` bounds each call, and connecting; a migration has its own
    /// (`migrationDeadline`). `connections`: 1 keeps writes in their order even across a call
    /// that gave up at its deadline and runs later (the replicator's case). `migrating` false:
    /// a schema found behind is an `unavailable` error at once, for a caller that must not wait
    /// for a migration (the page's `SiteView`). Call it on a Dispatch thread.
    public init(
        configuration: PostgresClient.Configuration, node: String, deadline: Duration = .seconds(5), connections: Int = 4, migrating: Bool = true
    ) throws {
        guard Self.isValidNodeName(node) else {
            throw CatalogError.refused("node name \"\(node.prefix(80))\" is not 1 to 63 of a-z, 0-9, ., _ and -")
        }
        guard deadline >= .milliseconds(100), deadline <= .seconds(300) else {
            throw CatalogError.refused("the catalogue's deadline \(deadline) is not between 0.1 and 300 seconds")
        }
        var configuration = configuration
        configuration.options.connectTimeout = deadline
        // A socket to a server that went away is found within seconds, not after TCP's minutes.
        configuration.options.keepAliveBehavior = .init(frequency: .seconds(5))
        configuration.options.maximumConnections = max(1, connections)
        self.node = node
        bridge = PostgresBridge(deadline: deadline)
        database = ReconnectingClient(configuration: configuration, backgroundLogger: Self.logger)
        do {
            let found = try wait("reading the schema's version") { try await Self.version($0) }
            if found < Self.schemaVersion {
                guard migrating else {
                    throw CatalogError.unavailable("the schema is at version \(found) of \(Self.schemaVersion): the node's cluster service brings it up to date")
                }
                try migrate()
            } else if found > Self.schemaVersion {
                throw CatalogError.newerSchema(found: found, known: Self.schemaVersion)
            }
        } catch {
            database.close()
            throw error
        }
    }

    /// Stops the client's connections; the catalogue answers no more calls.
    public func close() { database.close() }

    /// Waits for `work` on the current client; one that got no answer in time is replaced, so the
    /// next call connects afresh rather than behind the pool's growing wait.
    func wait<T: Sendable>(
        _ what: String, deadline: Duration? = nil, _ work: @escaping @Sendable (PostgresClient) async throws -> T
    ) throws -> T {
        let client = database.client
        do {
            return try bridge.wait(what, deadline: deadline) { try await work(client) }
        } catch CatalogError.unavailable(let why) {
            database.replace(client)
            throw CatalogError.unavailable(why)
        }
    }

    static func isValidNodeName(_ name: String) -> Bool {
        (1...63).contains(name.utf8.count) && name.allSatisfy { $0.isASCII && ($0.isLowercase || $0.isNumber || "._-".contains($0)) }
    }

    // MARK: - Writing (this node's rows only)

    public func put(_ entry: RecordingIndex.Entry) throws {
        try write("put", """
            INSERT INTO recordings (node, kind, camera, path, start_ns, end_ns, frames, bytes, codec, width, height, state)
            VALUES (\(node), \(entry.kind.rawValue), \(entry.camera), \(entry.path), \(entry.startNanos), \(entry.endNanos),
                    \(Int64(entry.frames)), \(entry.bytes), \(entry.codec), \(Int64(entry.width)), \(Int64(entry.height)), \(entry.state.rawValue))
            ON CONFLICT (node, path) DO UPDATE SET kind = EXCLUDED.kind, camera = EXCLUDED.camera, start_ns = EXCLUDED.start_ns,
                end_ns = EXCLUDED.end_ns, frames = EXCLUDED.frames, bytes = EXCLUDED.bytes, codec = EXCLUDED.codec,
                width = EXCLUDED.width, height = EXCLUDED.height, state = EXCLUDED.state
            RETURNING 1
            """)
    }

    public func setState(_ state: RecordingIndex.State, path: String) throws {
        try write("setState", "UPDATE recordings SET state = \(state.rawValue) WHERE node = \(node) AND path = \(path) RETURNING 1")
    }

    public func remove(path: String) throws {
        try write("remove", "DELETE FROM recordings WHERE node = \(node) AND path = \(path) RETURNING 1")
    }

    public func startMotionEvent(camera: String, startNanos: Int64) throws {
        try write("startMotionEvent", """
            INSERT INTO motion_events (node, camera, start_ns) VALUES (\(node), \(camera), \(startNanos))
            ON CONFLICT (node, camera, start_ns) DO NOTHING RETURNING 1
            """)
    }

    public func endMotionEvent(camera: String, startNanos: Int64, endNanos: Int64, peakPercent: Double, picture: String?) throws {
        try write("endMotionEvent", """
            INSERT INTO motion_events (node, camera, start_ns, end_ns, peak_percent, picture)
            VALUES (\(node), \(camera), \(startNanos), \(endNanos), \(peakPercent), \(picture))
            ON CONFLICT (node, camera, start_ns) DO UPDATE SET end_ns = EXCLUDED.end_ns, peak_percent = EXCLUDED.peak_percent,
                picture = EXCLUDED.picture
            RETURNING 1
            """)
    }

    public func putMotionEvent(_ event: RecordingIndex.MotionEvent, replacingMark: Bool) throws {
        try write("putMotionEvent", """
            INSERT INTO motion_events (node, camera, start_ns, end_ns, peak_percent, picture, reviewed_ns)
            VALUES (\(node), \(event.camera), \(event.startNanos), \(event.endNanos), \(event.peakPercent), \(event.picture), \(event.reviewedNanos))
            ON CONFLICT (node, camera, start_ns) DO UPDATE SET end_ns = EXCLUDED.end_ns, peak_percent = EXCLUDED.peak_percent,
                picture = EXCLUDED.picture,
                reviewed_ns = CASE WHEN \(replacingMark) THEN EXCLUDED.reviewed_ns ELSE COALESCE(EXCLUDED.reviewed_ns, motion_events.reviewed_ns) END
            RETURNING 1
            """)
    }

    public func removeMotionEvent(camera: String, startNanos: Int64) throws {
        try write("removeMotionEvent", "DELETE FROM motion_events WHERE node = \(node) AND camera = \(camera) AND start_ns = \(startNanos) RETURNING 1")
    }

    /// Any node's event: a person reviews the site's events on any node's page.
    public func setMotionEventReviewed(id: Int64, at nanos: Int64?) throws -> Bool {
        try write("setMotionEventReviewed", """
            UPDATE motion_events SET reviewed_ns = CASE WHEN \(nanos)::BIGINT IS NULL THEN NULL ELSE COALESCE(reviewed_ns, \(nanos)::BIGINT) END
            WHERE id = \(id) RETURNING 1
            """) > 0
    }

    /// Runs a statement that returns one row per row it changed; returns how many.
    @discardableResult
    private func write(_ what: String, _ query: PostgresQuery) throws -> Int {
        try read(what, query) { _ in () }.count
    }

    // MARK: - Reading (every node's rows)

    public func entries(
        camera: String?, kinds: [RecordingIndex.Kind]?, from: Int64?, to: Int64?, states: [RecordingIndex.State]?
    ) throws -> [RecordingIndex.Entry] {
        var sql = "SELECT \(Self.entryColumns) FROM recordings WHERE TRUE"
        var binds = PostgresBindings()
        if let camera { binds.append(camera); sql += " AND camera = $\(binds.count)" }
        if let kinds { binds.append(kinds.map(\.rawValue)); sql += " AND kind = ANY($\(binds.count))" }
        if let from { binds.append(from); sql += " AND end_ns >= $\(binds.count)" }
        if let to { binds.append(to); sql += " AND start_ns <= $\(binds.count)" }
        if let states { binds.append(states.map(\.rawValue)); sql += " AND state = ANY($\(binds.count))" }
        // COLLATE "C": byte order, as SQLite's, whatever the database's locale.
        sql += " ORDER BY start_ns, path COLLATE \"C\", id"
        return try read("entries", PostgresQuery(unsafeSQL: sql, binds: binds), Self.entry)
    }

    public func entry(id: Int64) throws -> RecordingIndex.Entry? {
        try read("entry", "SELECT \(unescaped: Self.entryColumns) FROM recordings WHERE id = \(id)", Self.entry).first
    }

    public func cameras() throws -> [String] {
        try read("cameras", "SELECT camera FROM recordings GROUP BY camera ORDER BY camera COLLATE \"C\"") { try $0.decode(String.self) }
    }

    public func bytesRecorded(sinceNanos: Int64) throws -> (bytes: Int64, firstStart: Int64?) {
        // SUM of BIGINT is NUMERIC: cast back, which PostgreSQL refuses (an error, not a wrap) past BIGINT.
        let rows = try read("bytesRecorded", """
            SELECT COALESCE(SUM(bytes), 0)::BIGINT, MIN(start_ns) FROM recordings
            WHERE end_ns >= \(sinceNanos) AND state NOT IN ('missing', 'quarantined')
            """) { row -> (Int64, Int64?) in
            let (bytes, first) = try row.decode((Int64, Int64?).self)
            guard bytes >= 0, first.map({ $0 >= 0 }) ?? true else {
                throw CatalogError.invalidRow("recordings add up to \(bytes) bytes from \(first.map(String.init) ?? "no start")")
            }
            return (bytes, first)
        }
        return rows.first.map { (bytes: $0.0, firstStart: $0.1) } ?? (0, nil)
    }

    public func motionEvents(camera: String?, from: Int64?, to: Int64?) throws -> [RecordingIndex.MotionEvent] {
        let (sql, binds) = Self.motionEventsSelect(camera: camera, from: from, to: to)
        return try read("motionEvents", PostgresQuery(unsafeSQL: sql + " ORDER BY start_ns, id", binds: binds), Self.motionEvent)
    }

    public func motionEvent(id: Int64) throws -> RecordingIndex.MotionEvent? {
        try read("motionEvent", "SELECT \(unescaped: Self.motionColumns) FROM motion_events WHERE id = \(id)", Self.motionEvent).first
    }

    public func motionEventsNewestFirst(
        camera: String?, from: Int64?, to: Int64?, unreviewedOnly: Bool, before: RecordingIndex.MotionEventCursor?, limit: Int
    ) throws -> [RecordingIndex.MotionEvent] {
        let query = Self.newestFirst(columns: Self.motionColumns, camera: camera, from: from, to: to, unreviewedOnly: unreviewedOnly, before: before, limit: limit)
        return try read("motionEventsNewestFirst", query, Self.motionEvent)
    }

    /// The review listing's query: `columns` of every node's events, newest first, a page at a time.
    static func newestFirst(
        columns: String, camera: String?, from: Int64?, to: Int64?, unreviewedOnly: Bool, before: RecordingIndex.MotionEventCursor?, limit: Int
    ) -> PostgresQuery {
        var (sql, binds) = motionEventsSelect(columns: columns, camera: camera, from: from, to: to)
        if unreviewedOnly { sql += " AND reviewed_ns IS NULL" }
        if let before {
            binds.append(before.startNanos)
            binds.append(before.id)
            sql += " AND (start_ns < $\(binds.count - 1) OR (start_ns = $\(binds.count - 1) AND id < $\(binds.count)))"
        }
        binds.append(Int64(clamping: max(0, limit)))
        sql += " ORDER BY start_ns DESC, id DESC LIMIT $\(binds.count)"
        return PostgresQuery(unsafeSQL: sql, binds: binds)
    }

    /// The SELECT of the events of `camera` (nil: all) that overlap [from, to] (nil: unbounded);
    /// one under way overlaps everything after its start.
    private static func motionEventsSelect(
        columns: String = motionColumns, camera: String?, from: Int64?, to: Int64?
    ) -> (String, PostgresBindings) {
        var sql = "SELECT \(columns) FROM motion_events WHERE TRUE"
        var binds = PostgresBindings()
        if let camera { binds.append(camera); sql += " AND camera = $\(binds.count)" }
        if let from { binds.append(from); sql += " AND (end_ns IS NULL OR end_ns >= $\(binds.count))" }
        if let to { binds.append(to); sql += " AND start_ns <= $\(binds.count)" }
        return (sql, binds)
    }

    /// Runs `query` through the bridge and turns each row into a value on the way.
    func read<T: Sendable>(_ what: String, _ query: PostgresQuery, _ row: @escaping @Sendable (PostgresRow) throws -> T) throws -> [T] {
        try wait(what) { client in
            var values: [T] = []
            for try await each in try await client.query(query, logger: Self.logger) { values.append(try row(each)) }
            return values
        }
    }
}
