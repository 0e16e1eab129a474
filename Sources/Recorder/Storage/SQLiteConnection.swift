internal import CSQLite
import Glibc
import Synchronization
import SystemPackage

/// A value bound to a statement's `?N`.
enum SQLiteValue {
    case text(String)
    case integer(Int64)
    case real(Double)
    case null
}

/// One SQLite connection and its prepared statements, closed with it.
/// Used under a lock (`RecordingIndex`'s writer, a `ReaderSlot`), so by one thread at a time
/// (SQLite's own mutexes are off for readers: SQLITE_OPEN_NOMUTEX).
final class SQLiteConnection {
    let db: OpaquePointer
    private var statements: [String: OpaquePointer] = [:]

    init(_ db: OpaquePointer) { self.db = db }

    /// A read-only connection to the index file at `path`.
    convenience init(readOnly path: String) throws {
        var handle: OpaquePointer?
        let status = sqlite3_open_v2(path, &handle, SQLITE_OPEN_READONLY | SQLITE_OPEN_NOMUTEX, nil)
        guard status == SQLITE_OK, let handle else {
            let message = handle.map { String(cString: sqlite3_errmsg($0)) } ?? "out of memory"
            sqlite3_close(handle)
            throw RecorderError.index(code: status, errno: nil, message: "cannot open the index \(path) to read: \(message)", isNewer: false)
        }
        sqlite3_busy_timeout(handle, 5000)
        self.init(handle)
    }

    /// Runs `sql` with `values` bound, turning each row into a `T`.
    func rows<T: Sendable>(_ sql: String, _ values: [SQLiteValue], _ row: @Sendable (OpaquePointer) -> T) throws -> [T] {
        let statement = try prepared(sql)
        defer {
            sqlite3_reset(statement)
            sqlite3_clear_bindings(statement)
        }
        for (i, value) in values.enumerated() {
            switch value {
            case .text(let t): sqlite3_bind_text(statement, Int32(i + 1), t, -1, csqlite_transient())
            case .integer(let n): sqlite3_bind_int64(statement, Int32(i + 1), n)
            case .real(let x): sqlite3_bind_double(statement, Int32(i + 1), x)
            case .null: sqlite3_bind_null(statement, Int32(i + 1))
            }
        }
        var rows: [T] = []
        while true {
            let status = sqlite3_step(statement)
            if status == SQLITE_ROW { rows.append(row(statement)); continue }
            guard status == SQLITE_DONE else { throw failure() }
            return rows
        }
    }

    deinit {
        for s in statements.values { sqlite3_finalize(s) }
        sqlite3_close(db)
    }

    /// Statements are prepared once and reused.
    func prepared(_ sql: String) throws -> OpaquePointer {
        if let s = statements[sql] { return s }
        var statement: OpaquePointer?
        guard sqlite3_prepare_v2(db, sql, -1, &statement, nil) == SQLITE_OK, let statement else {
            throw failure()
        }
        statements[sql] = statement
        return statement
    }

    /// The last failure, with SQLite's code and the system's errno behind it (ENOSPC under a
    /// write, for one), so callers decide by the code, never by the text.
    func failure(_ message: String? = nil) -> RecorderError {
        let code = sqlite3_extended_errcode(db)
        // SQLite keeps the last system errno even after later successes: it explains only I/O codes.
        let systemErrno = [SQLITE_IOERR, SQLITE_FULL, SQLITE_CANTOPEN].contains(code & 0xff) ? sqlite3_system_errno(db) : 0
        return .index(
            code: code, errno: systemErrno > 0 ? Errno(rawValue: systemErrno) : nil,
            message: "index: \(message ?? String(cString: sqlite3_errmsg(db)))", isNewer: false)
    }
}

/// A read-only connection of the index's pool, taken by one listing at a time (its lock is
/// never contended: the pool hands a slot to one caller).
final class ReaderSlot: Sendable {
    let connection: Mutex<SQLiteConnection>

    init(path: String) throws {
        connection = Mutex(try SQLiteConnection(readOnly: path))
    }
}
