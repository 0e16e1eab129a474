internal import CSQLite
import Capture
import CheckedMath
import Foundation
import Synchronization
import SystemPackage

/// The recordings index: every file Vigil writes under a storage root, in a SQLite file
/// (`ROOT/vigil-index.sqlite3`, WAL mode). A segment is `writing` from the moment its file is
/// created and `complete` only once the file and its directory are on disk, so the index never
/// claims more than the disk holds (Moonfire NVR's protocol). Paths are stored relative to the
/// root. Writes go through one connection, under a lock, from the storage thread; listings each
/// take a read-only connection, so neither waits for the other (WAL). Never called from a capture
/// thread or Swift's cooperative pool. The files are the truth: an index that is
/// lost or damaged is rebuilt from them (`StorageKeeper.open`).
public final class RecordingIndex: Sendable {
    public enum Kind: String, Sendable, CaseIterable {
        case segment, still
        /// An on-demand still (SIGUSR1), under `CAMERA/snapshots/`.
        case snapshot
        /// A daily timelapse video, under `CAMERA/timelapse/`.
        case timelapse

        /// The folder under `ROOT/CAMERA/` that holds this kind.
        var folder: String {
            switch self {
            case .segment: return StorageLayout.videoFolder
            case .still: return StorageLayout.stillsFolder
            case .snapshot: return StorageLayout.snapshotsFolder
            case .timelapse: return StorageLayout.timelapseFolder
            }
        }
    }

    public enum State: String, Sendable, CaseIterable {
        /// The file is being written (`NAME.partial`).
        case writing
        case complete
        /// Writing failed (disk full, I/O error); the file holds what reached the disk.
        case interrupted
        /// Found as `.partial` after a crash, cut back to its last complete fragment, finalized.
        case recovered
        /// The index knew it, but the file is gone.
        case missing
        /// Unplayable leftover moved to `ROOT/.quarantine/`: kept for a person to look at, counted
        /// against its camera's limits and deleted first when room is needed.
        case quarantined
    }

    public struct Entry: Sendable, Equatable {
        public var kind: Kind
        public var camera: String
        /// Relative to the storage root.
        public var path: String
        public var startNanos: Int64
        public var endNanos: Int64
        public var frames: Int
        public var bytes: Int64
        public var codec: String
        public var width: Int
        public var height: Int
        public var state: State
        /// The row's id in the index: what the web API names a file by (never its path). 0 for
        /// an entry not read from the index.
        public var id: Int64 = 0
        /// Here, in the archive's bucket, or both (`[archive]`); read from the index.
        public var location: Location = .local

        public init(
            kind: Kind, camera: String, path: String, startNanos: Int64, endNanos: Int64, frames: Int, bytes: Int64,
            codec: String, width: Int, height: Int, state: State
        ) {
            self.kind = kind
            self.camera = camera
            self.path = path
            self.startNanos = startNanos
            self.endNanos = endNanos
            self.frames = frames
            self.bytes = bytes
            self.codec = codec
            self.width = width
            self.height = height
            self.state = state
        }
    }

    /// The schema this code writes; `PRAGMA user_version` of the file. 0 is a file from before
    /// versioning (the same tables as version 1) or a new one.
    public static let schemaVersion: Int32 = 5

    public let root: String
    /// The file, or nil for an index kept in memory (when the file cannot be used).
    public let path: String?
    /// The one connection that writes (the storage thread's indexing, recovery), with its
    /// statements, reachable only under this lock.
    private let writer: Mutex<SQLiteConnection>
    /// Read-only connections for listings (the web server's, the commands'), taken one per
    /// query: with the write-ahead log a slow listing and indexing never wait for each other.
    /// Empty and unused for an index in memory, which only its one connection can see.
    private let readers = Mutex<[ReaderSlot]>([])
    /// Idle read-only connections kept open at most.
    private static let idleReaders = 4

    /// Opens (or creates) the index file of `root`, migrating it to `schemaVersion`. Throws an
    /// `RecorderError.index` whose code says whether the file is damaged, newer than this code, or
    /// cannot be written.
    public convenience init(root: String) throws {
        try self.init(root: root, path: StorageLayout(root: root).indexPath)
    }

    /// An index in memory only, for recording on when the file cannot be used; it is filled from
    /// the files by recovery and lost at exit.
    static func inMemory(root: String) throws -> RecordingIndex {
        try RecordingIndex(root: root, path: nil)
    }

    private init(root: String, path: String?) throws {
        self.root = root
        self.path = path
        let name = path ?? ":memory:"
        var handle: OpaquePointer?
        let status = sqlite3_open_v2(name, &handle, SQLITE_OPEN_READWRITE | SQLITE_OPEN_CREATE | SQLITE_OPEN_FULLMUTEX, nil)
        guard status == SQLITE_OK, let handle else {
            let message = handle.map { String(cString: sqlite3_errmsg($0)) } ?? "out of memory"
            sqlite3_close(handle)
            throw RecorderError.index(code: status, errno: nil, message: "cannot open the index \(name): \(message)", isNewer: false)
        }
        sqlite3_busy_timeout(handle, 5000)
        writer = Mutex(SQLiteConnection(handle))
        if path != nil {
            // The write-ahead log is checkpointed every 64 pages and cut back to 256 KiB after each
            // checkpoint: with SQLite's defaults (1000 pages, never shrunk) it alone grows to 4 MiB
            // and stays there, which on a small card is room for minutes of recordings, and on a
            // full disk is space no sweep can give back.
            try execute("""
                PRAGMA journal_mode = WAL; PRAGMA synchronous = NORMAL;
                PRAGMA wal_autocheckpoint = 64; PRAGMA journal_size_limit = \(Self.journalSizeLimit);
                """)
        }
        let version = try userVersion()
        guard version <= Self.schemaVersion else {
            throw RecorderError.index(code: SQLITE_ERROR, errno: nil, message: "the index \(name) was written by a newer Vigil (schema version \(version); this one knows up to \(Self.schemaVersion))", isNewer: true)
        }
        for (target, migration) in Self.migrations.enumerated() where Int32(target + 1) > version {
            try transaction {
                // Another process (`vigil recordings` at the same time) may have migrated it meanwhile.
                guard try userVersion() <= target else { return }
                for step in migration { try apply(step) }
                try execute("PRAGMA user_version = \(target + 1)")
            }
        }
    }

    func userVersion() throws -> Int32 {
        try query("PRAGMA user_version", []) { Int32(sqlite3_column_int64($0, 0)) }.first ?? 0
    }

    /// One step of the schema. Each can be applied to a file that already has it: a file from
    /// before versioning has the tables of version 1, and one a newer Vigil wrote may be opened
    /// again under an older version number.
    private enum Migration {
        /// Statements that are `IF NOT EXISTS` themselves.
        case sql(String)
        /// `ALTER TABLE … ADD COLUMN`, which SQLite has no `IF NOT EXISTS` for: skipped when
        /// `PRAGMA table_info` already lists the column.
        case addColumn(table: String, column: String, definition: String)
    }

    private func apply(_ migration: Migration) throws {
        switch migration {
        case .sql(let sql):
            try execute(sql)
        case .addColumn(let table, let column, let definition):
            let columns = try query("PRAGMA table_info(\(table))", []) { Self.text($0, 1) }
            guard !columns.contains(column) else { return }
            try execute("ALTER TABLE \(table) ADD COLUMN \(column) \(definition)")
        }
    }

    /// Steps n bring a file from schema version n to n + 1 (`migrations[0]` is version 1, the
    /// recordings; `migrations[1]` adds motion events; `migrations[2]` when an event was marked
    /// reviewed on the page, NULL while it is not, and the index that lists events newest first
    /// across cameras: without it each page of the review listing sorted the whole table,
    /// 88 ms for 100,000 events, 0.1 ms with it; `migrations[3]` the archive's queue;
    /// `migrations[4]` the longest recording of each camera and kind, which bounds a listing's
    /// walk (`entries`)).
    private static let migrations: [[Migration]] = [
        [.sql("""
        CREATE TABLE IF NOT EXISTS recordings (
            id INTEGER PRIMARY KEY,
            kind TEXT NOT NULL,
            camera TEXT NOT NULL,
            path TEXT NOT NULL UNIQUE,
            start_ns INTEGER NOT NULL,
            end_ns INTEGER NOT NULL,
            frames INTEGER NOT NULL,
            bytes INTEGER NOT NULL,
            codec TEXT NOT NULL,
            width INTEGER NOT NULL,
            height INTEGER NOT NULL,
            state TEXT NOT NULL
        );
        CREATE INDEX IF NOT EXISTS recordings_by_time ON recordings (camera, kind, start_ns);
        """)],
        // Motion events: end_ns is NULL while one is under way; picture is relative to the root.
        [.sql("""
        CREATE TABLE IF NOT EXISTS motion_events (
            id INTEGER PRIMARY KEY,
            camera TEXT NOT NULL,
            start_ns INTEGER NOT NULL,
            end_ns INTEGER,
            peak_percent REAL NOT NULL DEFAULT 0,
            picture TEXT,
            UNIQUE (camera, start_ns)
        );
        CREATE INDEX IF NOT EXISTS motion_events_by_time ON motion_events (camera, start_ns);
        """)],
        [.addColumn(table: "motion_events", column: "reviewed_ns", definition: "INTEGER"),
         .sql("CREATE INDEX IF NOT EXISTS motion_events_newest ON motion_events (start_ns)")],
        // The archive's queue (`RecordingIndex+Archive`): a row per file copied, or to be copied, to
        // the bucket, and the parts of a multipart upload that the bucket confirmed. Keyed by path
        // without a rowid (one b-tree each, not two: every page counts on a small card), and the
        // files still waiting indexed apart, so the queue is found without reading the archived rows.
        [.sql("""
        CREATE TABLE IF NOT EXISTS archive (
            file TEXT PRIMARY KEY,
            upload_state TEXT NOT NULL,
            size INTEGER NOT NULL,
            sha256 TEXT,
            upload_id TEXT,
            part_size INTEGER,
            local INTEGER NOT NULL DEFAULT 1,
            attempts INTEGER NOT NULL DEFAULT 0,
            last_error TEXT,
            queued_ns INTEGER NOT NULL,
            archived_ns INTEGER
        ) WITHOUT ROWID;
        CREATE INDEX IF NOT EXISTS archive_waiting ON archive (queued_ns) WHERE upload_state != 'archived';
        CREATE TABLE IF NOT EXISTS archive_parts (
            file TEXT NOT NULL,
            part INTEGER NOT NULL,
            size INTEGER NOT NULL,
            etag TEXT NOT NULL,
            sha256 TEXT NOT NULL,
            PRIMARY KEY (file, part)
        ) WITHOUT ROWID;
        """)],
        // The longest recording (end_ns − start_ns, at least 0) each camera and kind ever had,
        // kept by triggers on every write, filled once from the rows already there. It only grows:
        // a deleted recording leaves it as it was, which is still a bound. A length that is not
        // an exact integer (times that were not, or a difference past 64 bits) is stored as a
        // REAL, which `entries` takes as "no bound".
        [.sql("""
        CREATE TABLE IF NOT EXISTS recording_spans (
            camera TEXT NOT NULL,
            kind TEXT NOT NULL,
            longest_ns NOT NULL,
            PRIMARY KEY (camera, kind)
        ) WITHOUT ROWID;
        INSERT INTO recording_spans (camera, kind, longest_ns)
            SELECT camera, kind, MAX(\(span("recordings"))) FROM recordings WHERE true GROUP BY camera, kind
            \(spanUpsert);
        CREATE TRIGGER IF NOT EXISTS recording_spans_insert AFTER INSERT ON recordings \(spanGrows) BEGIN
            INSERT INTO recording_spans (camera, kind, longest_ns) VALUES (new.camera, new.kind, \(span("new"))) \(spanUpsert);
        END;
        CREATE TRIGGER IF NOT EXISTS recording_spans_update AFTER UPDATE OF camera, kind, start_ns, end_ns ON recordings \(spanGrows) BEGIN
            INSERT INTO recording_spans (camera, kind, longest_ns) VALUES (new.camera, new.kind, \(span("new"))) \(spanUpsert);
        END;
        """)],
    ]

    /// The length of `row`'s recording for `recording_spans`: exact when both times are integers
    /// (a difference past 64 bits becomes a REAL by itself), else a REAL above any length.
    private static func span(_ row: String) -> String {
        "CASE WHEN typeof(\(row).start_ns) = 'integer' AND typeof(\(row).end_ns) = 'integer' THEN MAX(0, \(row).end_ns - \(row).start_ns) ELSE 1e300 END"
    }
    /// A trigger writes only when the row is longer than its camera and kind's longest so far:
    /// nearly every segment is as long as the last, and a read of the small table is cheaper
    /// than a write to it.
    private static let spanGrows = """
        WHEN NOT EXISTS (SELECT 1 FROM recording_spans WHERE camera = new.camera AND kind = new.kind AND longest_ns >= \(span("new")))
        """
    private static let spanUpsert = "ON CONFLICT (camera, kind) DO UPDATE SET longest_ns = MAX(longest_ns, excluded.longest_ns)"

    /// Reads every page of the file (SQLite's `quick_check`): a damaged file is found at start,
    /// not halfway through a recording.
    func checkIntegrity() throws {
        let result = try query("PRAGMA quick_check", []) { Self.text($0, 0) }
        guard result == ["ok"] else {
            throw RecorderError.index(
                code: SQLITE_CORRUPT, errno: nil, message: "the index \(path ?? ":memory:") is damaged: \(result.prefix(3).joined(separator: "; "))",
                isNewer: false)
        }
    }

    // MARK: - Writing

    /// Adds or replaces the entry for `entry.path`.
    public func put(_ entry: Entry) throws {
        try run("""
            INSERT INTO recordings (kind, camera, path, start_ns, end_ns, frames, bytes, codec, width, height, state)
            VALUES (?1, ?2, ?3, ?4, ?5, ?6, ?7, ?8, ?9, ?10, ?11)
            ON CONFLICT(path) DO UPDATE SET kind = ?1, camera = ?2, start_ns = ?4, end_ns = ?5, frames = ?6,
                bytes = ?7, codec = ?8, width = ?9, height = ?10, state = ?11
            """, [.text(entry.kind.rawValue), .text(entry.camera), .text(entry.path), .integer(entry.startNanos),
                  .integer(entry.endNanos), .integer(Int64(entry.frames)), .integer(entry.bytes), .text(entry.codec),
                  .integer(Int64(entry.width)), .integer(Int64(entry.height)), .text(entry.state.rawValue)])
    }

    public func setState(_ state: State, path: String) throws {
        try run("UPDATE recordings SET state = ?1 WHERE path = ?2", [.text(state.rawValue), .text(path)])
    }

    public func remove(path: String) throws {
        try run("DELETE FROM recordings WHERE path = ?1", [.text(path)])
    }

    /// The most the write-ahead log keeps on disk after a checkpoint.
    static let journalSizeLimit = 262_144

    /// Copies the write-ahead log into the index file and empties it, giving its space back;
    /// after a full disk, once the sweep has made room for the copy.
    func truncateJournal() throws {
        guard path != nil else { return }
        try execute("PRAGMA wal_checkpoint(TRUNCATE)")
    }

    /// Moves the times of the recordings that ended in [from, to] on by `nanos` (they were
    /// stamped by a clock that was `nanos` behind); returns how many.
    func shiftTimes(by nanos: Int64, endingFrom from: Int64, to: Int64) throws -> Int {
        try transaction {
            try run("UPDATE recordings SET start_ns = start_ns + ?1, end_ns = end_ns + ?1 WHERE end_ns BETWEEN ?2 AND ?3",
                    [.integer(nanos), .integer(from), .integer(to)])
            return try query("SELECT changes()", []) { Int(sqlite3_column_int64($0, 0)) }.first ?? 0
        }
    }

    /// Runs `body` in one transaction (much faster for many writes; all or nothing).
    public func transaction<T>(_ body: () throws -> T) throws -> T {
        try execute("BEGIN IMMEDIATE")
        do {
            let result = try body()
            try execute("COMMIT")
            return result
        } catch {
            try? execute("ROLLBACK")
            throw error
        }
    }

    // MARK: - Reading

    /// Entries ordered by start time; nil arguments do not filter. An entry is in [from, to]
    /// when it overlaps that range.
    public func entries(camera: String? = nil, kind: Kind? = nil, from: Int64? = nil, to: Int64? = nil, states: [State]? = nil) throws -> [Entry] {
        try entries(camera: camera, kinds: kind.map { [$0] }, from: from, to: to, states: states)
    }

    /// Entries of any of `kinds` (nil: every kind), ordered by start time.
    public func entries(camera: String? = nil, kinds: [Kind]?, from: Int64? = nil, to: Int64? = nil, states: [State]? = nil) throws -> [Entry] {
        try readTogether { c in
            let longest = from == nil ? [:] : try Self.longestSpans(c, camera: camera)
            let query = Self.entriesQuery(camera: camera, kinds: kinds, from: from, to: to, states: states, longest: longest)
            return try c.rows(query.sql, query.values, Self.entry)
        }
    }

    /// The `entries` statement. An entry overlaps [from, to] when it ends at or after `from` and
    /// starts at or before `to`; `recordings_by_time` (camera, kind, start_ns) bounds only the
    /// second, so alone it walks every row of the camera since its first (525,000 a year of
    /// 1-minute segments, for a day's 1,440). No recording of a kind is longer than
    /// `longest[kind]`, so one that ends at or after `from` starts at or after `from − longest`:
    /// that bound, per kind, gives the walk both ends and leaves the rows as they were. A kind
    /// with no exact bound (none recorded, a length past 64 bits, `from − longest` past 64 bits)
    /// is walked from its first row, as before. Several kinds are one SELECT each, joined by
    /// UNION ALL: SQLite's planner, without statistics, walks the whole camera for an OR of
    /// three kinds' ranges.
    static func entriesQuery(camera: String?, kinds: [Kind]?, from: Int64?, to: Int64?, states: [State]?, longest: [String: Int64]) -> (sql: String, values: [SQLiteValue]) {
        var values: [SQLiteValue] = []
        func parameter(_ value: SQLiteValue) -> String {
            values.append(value)
            return "?\(values.count)"
        }
        func bound(_ kind: String) -> String {
            guard let from, let length = longest[kind], let start = from.subtracting(length) else { return "" }
            return " AND recordings.start_ns >= \(parameter(.integer(start)))"
        }
        var filters = ""
        if let camera { filters += " AND recordings.camera = \(parameter(.text(camera)))" }
        if let from { filters += " AND recordings.end_ns >= \(parameter(.integer(from)))" }
        if let to { filters += " AND recordings.start_ns <= \(parameter(.integer(to)))" }
        if let states { filters += " AND recordings.state IN (" + states.map { "'\($0.rawValue)'" }.joined(separator: ",") + ")" }
        let select = "SELECT \(entryColumns) FROM \(entryTables) WHERE 1"
        guard from != nil, let kinds, !kinds.isEmpty else {
            let kindFilter = kinds.map { " AND recordings.kind IN (" + $0.map { "'\($0.rawValue)'" }.joined(separator: ",") + ")" } ?? bound(anyKind)
            return (select + kindFilter + filters + " ORDER BY recordings.start_ns, recordings.path", values)
        }
        var seen = Set<Kind>()
        let parts = kinds.filter { seen.insert($0).inserted }.map { select + " AND recordings.kind = '\($0.rawValue)'" + bound($0.rawValue) + filters }
        // A compound SELECT is ordered by its result columns' names.
        return (parts.joined(separator: " UNION ALL ") + (parts.count == 1 ? " ORDER BY recordings.start_ns, recordings.path" : " ORDER BY start_ns, path"), values)
    }

    /// The key of `longestSpans` that holds the longest recording of any kind.
    static let anyKind = "*"

    /// The longest recording of each kind of `camera` (nil: of any camera), from
    /// `recording_spans`, and under `anyKind` the longest of all; only exact lengths are given,
    /// so a kind missing here has no bound.
    static func longestSpans(_ c: SQLiteConnection, camera: String?) throws -> [String: Int64] {
        let rows = try c.rows(
            "SELECT kind, MAX(longest_ns) FROM recording_spans WHERE ?1 IS NULL OR camera = ?1 GROUP BY kind",
            [camera.map { .text($0) } ?? .null]
        ) { s in
            (text(s, 0), sqlite3_column_type(s, 1) == SQLITE_INTEGER ? sqlite3_column_int64(s, 1) : nil)
        }
        var longest: [String: Int64] = [:]
        for case let (kind, length?) in rows { longest[kind] = length }
        if longest.count == rows.count, let most = longest.values.max() { longest[anyKind] = most }
        return longest
    }

    /// The entry with this id (`Entry.id`), if there is one.
    public func entry(id: Int64) throws -> Entry? {
        try read("SELECT \(Self.entryColumns) FROM \(Self.entryTables) WHERE recordings.id = ?1", [.integer(id)], Self.entry).first
    }

    /// A recording and, when the archive has it, its archive row (for `Entry.location`).
    static let entryTables = "recordings LEFT JOIN archive ON archive.file = recordings.path"
    static let entryColumns = """
        recordings.kind, recordings.camera, recordings.path, recordings.start_ns, recordings.end_ns, recordings.frames,
        recordings.bytes, recordings.codec, recordings.width, recordings.height, recordings.state, recordings.id,
        archive.upload_state = 'archived', COALESCE(archive.local, 1)
        """

    static func entry(_ s: OpaquePointer) -> Entry {
        var entry = Entry(
            kind: Kind(rawValue: Self.text(s, 0)) ?? .segment, camera: Self.text(s, 1), path: Self.text(s, 2),
            startNanos: sqlite3_column_int64(s, 3), endNanos: sqlite3_column_int64(s, 4), frames: Int(sqlite3_column_int64(s, 5)),
            bytes: sqlite3_column_int64(s, 6), codec: Self.text(s, 7), width: Int(sqlite3_column_int64(s, 8)),
            height: Int(sqlite3_column_int64(s, 9)), state: State(rawValue: Self.text(s, 10)) ?? .missing)
        entry.id = sqlite3_column_int64(s, 11)
        if sqlite3_column_int64(s, 12) != 0 { entry.location = sqlite3_column_int64(s, 13) != 0 ? .both : .archive }
        return entry
    }

    /// Every camera in the index.
    public func cameras() throws -> [String] {
        try read("SELECT DISTINCT camera FROM recordings ORDER BY camera", []) { Self.text($0, 0) }
    }

    /// Bytes of recordings that ended after `sinceNanos`, and the earliest start among them.
    public func bytesRecorded(sinceNanos: Int64) throws -> (bytes: Int64, firstStart: Int64?) {
        try read("SELECT COALESCE(SUM(bytes), 0), MIN(start_ns) FROM recordings WHERE end_ns >= ?1 AND state NOT IN ('missing', 'quarantined')", [.integer(sinceNanos)]) { s in
            (sqlite3_column_int64(s, 0), sqlite3_column_type(s, 1) == SQLITE_NULL ? nil : sqlite3_column_int64(s, 1))
        }.first ?? (0, nil)
    }

    /// The end of the newest recording (of `camera`, or any) that is, or is being, recorded (not missing or quarantined).
    func newestEnd(camera: String? = nil) throws -> Int64? {
        try read("SELECT MAX(end_ns) FROM recordings WHERE state NOT IN ('missing', 'quarantined')" + (camera == nil ? "" : " AND camera = ?1"), camera.map { [.text($0)] } ?? []) { s in
            sqlite3_column_type(s, 0) == SQLITE_NULL ? nil : sqlite3_column_int64(s, 0)
        }.first ?? nil
    }

    // MARK: - SQLite


    func execute(_ sql: String) throws {
        try writer.withLock { c in
            var error: UnsafeMutablePointer<CChar>?
            let status = sqlite3_exec(c.db, sql, nil, nil, &error)
            guard status == SQLITE_OK else {
                let message = error.map { String(cString: $0) } ?? "unknown error"
                sqlite3_free(error)
                throw c.failure(message)
            }
        }
    }

    func run(_ sql: String, _ values: [SQLiteValue]) throws {
        _ = try query(sql, values) { _ in () }
    }

    /// A statement on the writing connection (writes, and reads inside a transaction).
    func query<T: Sendable>(_ sql: String, _ values: [SQLiteValue], _ row: @Sendable (OpaquePointer) -> T) throws -> [T] {
        try writer.withLock { try $0.rows(sql, values, row) }
    }

    /// A listing, on a read-only connection of its own: it sees what was committed when it began.
    func read<T: Sendable>(_ sql: String, _ values: [SQLiteValue], _ row: @Sendable (OpaquePointer) -> T) throws -> [T] {
        try withReader { try $0.rows(sql, values, row) }
    }

    /// Statements that must see the same committed state (a bound read, then the rows it
    /// bounds): one read transaction on a read-only connection. An index in memory has only its
    /// one connection, held under the lock meanwhile (it may be inside a writer's transaction,
    /// which it cannot nest).
    func readTogether<T: Sendable>(_ body: (SQLiteConnection) throws -> T) throws -> T {
        guard path != nil else { return try writer.withLock { try body($0) } }
        return try withReader { c in
            _ = try c.rows("BEGIN", []) { _ in () }
            defer { _ = try? c.rows("COMMIT", []) { _ in () } }
            return try body(c)
        }
    }

    private func withReader<T: Sendable>(_ body: (SQLiteConnection) throws -> T) throws -> T {
        guard let path else { return try writer.withLock { try body($0) } }
        let reader = try readers.withLock { $0.popLast() } ?? ReaderSlot(path: path)
        let result = try reader.connection.withLock { try body($0) }
        readers.withLock { if $0.count < Self.idleReaders { $0.append(reader) } }
        return result
    }

    static func text(_ s: OpaquePointer, _ column: Int32) -> String {
        sqlite3_column_text(s, column).map { String(cString: $0) } ?? ""
    }
}
