internal import CSQLite
import Foundation
import Synchronization

/// Who may use the web server, kept in the index beside what they watch: users with a role and
/// a password hash, API tokens and browser sessions (each stored as the SHA-256 of its secret,
/// never the secret), and the audit trail of who watched, downloaded or changed what. The
/// hashing and the rules are the `Access` target's; this file only stores rows.
///
/// The tables are made when something is first written to them, not by a schema migration: an
/// index that never serves the web (a small card, a recorder without users) keeps its size. On a
/// 256 KiB disk five more tables were enough for a finished segment's row to lose the room the
/// sweep had freed (`IndexOnDiskTests`). Until they exist, every read is empty.
extension RecordingIndex {
    static let accessTables = """
        CREATE TABLE IF NOT EXISTS users (
            name TEXT PRIMARY KEY, role TEXT NOT NULL, password TEXT NOT NULL, created_ns INTEGER NOT NULL
        );
        CREATE TABLE IF NOT EXISTS api_tokens (
            name TEXT PRIMARY KEY, user TEXT NOT NULL, hash TEXT NOT NULL UNIQUE, created_ns INTEGER NOT NULL
        );
        CREATE TABLE IF NOT EXISTS sessions (
            hash TEXT PRIMARY KEY, user TEXT NOT NULL, created_ns INTEGER NOT NULL, last_used_ns INTEGER NOT NULL,
            address TEXT NOT NULL, user_agent TEXT NOT NULL, credential TEXT NOT NULL
        );
        CREATE TABLE IF NOT EXISTS audit (
            id INTEGER PRIMARY KEY, at_ns INTEGER NOT NULL, user TEXT NOT NULL, credential TEXT NOT NULL,
            address TEXT NOT NULL, action TEXT NOT NULL, subject TEXT NOT NULL, outcome TEXT NOT NULL
        );
        CREATE INDEX IF NOT EXISTS audit_by_time ON audit (at_ns);
        """

    public struct UserRow: Sendable, Equatable {
        public var name: String
        /// "admin" or "viewer".
        public var role: String
        /// The password's hash in its encoded form (`PasswordHash`).
        public var password: String
        public var createdNanos: Int64
        public init(name: String, role: String, password: String, createdNanos: Int64) {
            self.name = name; self.role = role; self.password = password; self.createdNanos = createdNanos
        }
    }

    public struct TokenRow: Sendable, Equatable {
        public var name: String
        public var user: String
        /// SHA-256 of the token, in hex.
        public var hash: String
        public var createdNanos: Int64
        public init(name: String, user: String, hash: String, createdNanos: Int64) {
            self.name = name; self.user = user; self.hash = hash; self.createdNanos = createdNanos
        }
    }

    public struct SessionRow: Sendable, Equatable {
        /// SHA-256 of the session id the browser's cookie holds, in hex.
        public var hash: String
        public var user: String
        public var createdNanos: Int64
        public var lastUsedNanos: Int64
        public var address: String
        public var userAgent: String
        /// What the session was begun with: "password", or "token " and the token's SHA-256 (the
        /// session ends with the token: revoked, or token_file changed).
        public var credential: String
        public init(hash: String, user: String, createdNanos: Int64, lastUsedNanos: Int64, address: String, userAgent: String, credential: String) {
            self.hash = hash; self.user = user; self.createdNanos = createdNanos; self.lastUsedNanos = lastUsedNanos
            self.address = address; self.userAgent = userAgent; self.credential = credential
        }
    }

    public struct AuditRow: Sendable, Equatable {
        public var id: Int64
        public var atNanos: Int64
        public var user: String
        /// How they proved it: "session 1a2b3c4d", "token NAME", "token_file", "none".
        public var credential: String
        public var address: String
        /// "login", "login-failed", "logout", "live", "play", "clip", "mark", "audit".
        public var action: String
        /// What the action was on: a camera, a file id, an event id, a user name.
        public var subject: String
        /// "ok", or why it was refused.
        public var outcome: String
        public init(id: Int64 = 0, atNanos: Int64, user: String, credential: String, address: String, action: String, subject: String, outcome: String) {
            self.id = id; self.atNanos = atNanos; self.user = user; self.credential = credential; self.address = address
            self.action = action; self.subject = subject; self.outcome = outcome
        }
    }

    /// Makes the tables, once, before a write.
    private func makeAccessTables() throws {
        guard !accessTablesExist.load(ordering: .acquiring) else { return }
        try transaction { try execute(Self.accessTables) }
        accessTablesExist.store(true, ordering: .releasing)
    }

    /// True once the tables exist (made here or by another process, `vigil user add`).
    private func hasAccessTables() throws -> Bool {
        if accessTablesExist.load(ordering: .acquiring) { return true }
        let found = try read("SELECT count(*) FROM sqlite_master WHERE type = 'table' AND name = 'audit'", []) { sqlite3_column_int64($0, 0) }.first == 1
        if found { accessTablesExist.store(true, ordering: .releasing) }
        return found
    }

    // MARK: - Users

    /// Adds `user`, or replaces the role and password of the one of that name.
    public func putUser(_ user: UserRow) throws {
        try makeAccessTables()
        try run("""
            INSERT INTO users (name, role, password, created_ns) VALUES (?1, ?2, ?3, ?4)
            ON CONFLICT(name) DO UPDATE SET role = ?2, password = ?3
            """, [.text(user.name), .text(user.role), .text(user.password), .integer(user.createdNanos)])
    }

    /// Removes a user with its tokens and sessions; false when there was none of that name.
    public func removeUser(named name: String) throws -> Bool {
        guard try hasAccessTables() else { return false }
        return try transaction {
            try run("DELETE FROM api_tokens WHERE user = ?1", [.text(name)])
            try run("DELETE FROM sessions WHERE user = ?1", [.text(name)])
            try run("DELETE FROM users WHERE name = ?1", [.text(name)])
            return try changes() > 0
        }
    }

    public func users() throws -> [UserRow] {
        guard try hasAccessTables() else { return [] }
        return try read("SELECT name, role, password, created_ns FROM users ORDER BY name", []) {
            UserRow(name: Self.text($0, 0), role: Self.text($0, 1), password: Self.text($0, 2), createdNanos: sqlite3_column_int64($0, 3))
        }
    }

    // MARK: - API tokens

    public func putToken(_ token: TokenRow) throws {
        try makeAccessTables()
        try run("INSERT INTO api_tokens (name, user, hash, created_ns) VALUES (?1, ?2, ?3, ?4)",
                [.text(token.name), .text(token.user), .text(token.hash), .integer(token.createdNanos)])
    }

    /// False when there was no token of that name.
    public func removeToken(named name: String) throws -> Bool {
        guard try hasAccessTables() else { return false }
        return try transaction {
            try run("DELETE FROM api_tokens WHERE name = ?1", [.text(name)])
            return try changes() > 0
        }
    }

    public func tokens() throws -> [TokenRow] {
        guard try hasAccessTables() else { return [] }
        return try read("SELECT name, user, hash, created_ns FROM api_tokens ORDER BY name", []) {
            TokenRow(name: Self.text($0, 0), user: Self.text($0, 1), hash: Self.text($0, 2), createdNanos: sqlite3_column_int64($0, 3))
        }
    }

    // MARK: - Sessions

    public func putSession(_ session: SessionRow) throws {
        try makeAccessTables()
        try run("""
            INSERT INTO sessions (hash, user, created_ns, last_used_ns, address, user_agent, credential) VALUES (?1, ?2, ?3, ?4, ?5, ?6, ?7)
            ON CONFLICT(hash) DO UPDATE SET last_used_ns = MAX(last_used_ns, ?4)
            """, [.text(session.hash), .text(session.user), .integer(session.createdNanos), .integer(session.lastUsedNanos),
                  .text(session.address), .text(session.userAgent), .text(session.credential)])
    }

    /// Moves sessions' last use on (never back), in one transaction.
    public func touchSessions(_ lastUse: [String: Int64]) throws {
        guard !lastUse.isEmpty, try hasAccessTables() else { return }
        try transaction {
            for (hash, nanos) in lastUse {
                try run("UPDATE sessions SET last_used_ns = MAX(last_used_ns, ?2) WHERE hash = ?1", [.text(hash), .integer(nanos)])
            }
        }
    }

    /// Removes the sessions whose hash begins with `prefix` (a whole hash, or the short id
    /// `vigil session list` shows); returns how many.
    public func removeSessions(hashPrefix prefix: String) throws -> Int {
        guard !prefix.isEmpty, prefix.allSatisfy(\.isHexDigit), try hasAccessTables() else { return 0 }
        return try transaction {
            try run("DELETE FROM sessions WHERE substr(hash, 1, ?2) = ?1", [.text(prefix.lowercased()), .integer(Int64(prefix.count))])
            return try changes()
        }
    }

    /// Removes sessions idle since before `idleBefore` or created before `createdBefore`.
    public func removeSessions(idleBefore: Int64, createdBefore: Int64) throws -> Int {
        guard try hasAccessTables() else { return 0 }
        return try transaction {
            try run("DELETE FROM sessions WHERE last_used_ns < ?1 OR created_ns < ?2", [.integer(idleBefore), .integer(createdBefore)])
            return try changes()
        }
    }

    public func sessions() throws -> [SessionRow] {
        guard try hasAccessTables() else { return [] }
        return try read("SELECT hash, user, created_ns, last_used_ns, address, user_agent, credential FROM sessions ORDER BY created_ns", []) {
            SessionRow(hash: Self.text($0, 0), user: Self.text($0, 1), createdNanos: sqlite3_column_int64($0, 2),
                       lastUsedNanos: sqlite3_column_int64($0, 3), address: Self.text($0, 4), userAgent: Self.text($0, 5), credential: Self.text($0, 6))
        }
    }

    // MARK: - Audit trail

    public func appendAudit(_ rows: [AuditRow]) throws {
        guard !rows.isEmpty else { return }
        try makeAccessTables()
        try transaction {
            for r in rows {
                try run("""
                    INSERT INTO audit (at_ns, user, credential, address, action, subject, outcome) VALUES (?1, ?2, ?3, ?4, ?5, ?6, ?7)
                    """, [.integer(r.atNanos), .text(r.user), .text(r.credential), .text(r.address), .text(r.action), .text(r.subject), .text(r.outcome)])
            }
        }
    }

    /// The trail from `since` on, oldest first, at most `limit` rows (of `user` only when given).
    public func audit(since: Int64, user: String?, limit: Int) throws -> [AuditRow] {
        guard try hasAccessTables() else { return [] }
        return try read("""
            SELECT id, at_ns, user, credential, address, action, subject, outcome FROM audit
            WHERE at_ns >= ?1 AND (?2 IS NULL OR user = ?2) ORDER BY at_ns, id LIMIT ?3
            """, [.integer(since), user.map { .text($0) } ?? .null, .integer(Int64(max(0, limit)))]) {
            AuditRow(id: sqlite3_column_int64($0, 0), atNanos: sqlite3_column_int64($0, 1), user: Self.text($0, 2), credential: Self.text($0, 3),
                     address: Self.text($0, 4), action: Self.text($0, 5), subject: Self.text($0, 6), outcome: Self.text($0, 7))
        }
    }

    /// Removes the trail older than `before` (its retention); returns how many rows.
    public func pruneAudit(before: Int64) throws -> Int {
        guard try hasAccessTables() else { return 0 }
        return try transaction {
            try run("DELETE FROM audit WHERE at_ns < ?1", [.integer(before)])
            return try changes()
        }
    }

    private func changes() throws -> Int {
        try query("SELECT changes()", []) { Int(sqlite3_column_int64($0, 0)) }.first ?? 0
    }
}
