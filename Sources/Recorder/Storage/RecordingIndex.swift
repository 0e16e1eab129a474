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
    public static let schemaVersion: Int32 = 6

    public let root: String
    /// The file, or nil for an index kept in memory (when the file cannot be used).
    public let path: String?
    /// The one connection that writes (the storage thread's indexing, recovery), with its
    /// statements, reachable only under this lock.
    private let writer: Mutex<SQLiteConnection>
    /// Held by the thread running a transaction for all of it, and by every statement on the
    /// writing connection: another thread's statement never lands inside someone else's
    /// transaction, to be committed or rolled back with it (the web's audit batches run beside
    /// the storage thread's writes). Recursive, as the transaction's own statements take it again.
    private let writeTurn = NSRecursiveLock()
    /// Read-only connections for listings (the web server's, the commands'), taken one per
    /// query: with the write-ahead log a slow listing and indexing never wait for each other.
    /// Empty and unused for an index in memory, which only its one connection can see.
    private let readers = Mutex<[ReaderSlot]>([])
    /// Idle read-only connections kept open at most: as many reads at once find one open (the
    /// web server reads with as many threads).
    public static let idleReaders = 4
    /// The access tables exist (`RecordingIndex+Access`): known once seen or made, so they are
    /// looked for at most until then.
    let accessTablesExist = Atomic<Bool>(false)

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
    /// walk (`entries`); `migrations[5]` when each finished file was last modified, as it was
    /// indexed, so recovery finds a file changed since by its size or its time). The web's users,
    /// tokens, sessions and audit trail are not a version: their tables are made when first
    /// written (`RecordingIndex+Access`).
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
        // The file's modification time when its row was written (NULL while it is being written,
        // and for rows from before): recovery reads a file again when it differs.
        [.addColumn(table: "recordings", column: "modified_ns", definition: "INTEGER")],
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
    /// A finished file's modification time is read here (one stat) and kept with it.
    public func put(_ entry: Entry) throws {
        let finished = entry.state != .writing && entry.state != .missing
        let modified = finished ? StorageRecovery.onDisk(entry.path, root: root)?.modifiedNanos : nil
        try run("""
            INSERT INTO recordings (kind, camera, path, start_ns, end_ns, frames, bytes, codec, width, height, state, modified_ns)
            VALUES (?1, ?2, ?3, ?4, ?5, ?6, ?7, ?8, ?9, ?10, ?11, ?12)
            ON CONFLICT(path) DO UPDATE SET kind = ?1, camera = ?2, start_ns = ?4, end_ns = ?5, frames = ?6,
                bytes = ?7, codec = ?8, width = ?9, height = ?10, state = ?11, modified_ns = ?12
            """, [.text(entry.kind.rawValue), .text(entry.camera), .text(entry.path), .integer(entry.startNanos),
                  .integer(entry.endNanos), .integer(Int64(entry.frames)), .integer(entry.bytes), .text(entry.codec),
                  .integer(Int64(entry.width)), .integer(Int64(entry.height)), .text(entry.state.rawValue),
                  modified.map { .integer($0) } ?? .null])
    }

    /// The modification time each finished file had when it was indexed, by path.
    func modifiedTimes() throws -> [String: Int64] {
        Dictionary(try query("SELECT path, modified_ns FROM recordings WHERE modified_ns IS NOT NULL", []) {
            (Self.text($0, 0), sqlite3_column_int64($0, 1))
        }, uniquingKeysWith: { a, _ in a })
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
        writeTurn.lock()
        defer { writeTurn.unlock() }
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

    // MARK: - SQLite


    func execute(_ sql: String) throws {
        writeTurn.lock()
        defer { writeTurn.unlock() }
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
        writeTurn.lock()
        defer { writeTurn.unlock() }
        return try writer.withLock { try $0.rows(sql, values, row) }
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
