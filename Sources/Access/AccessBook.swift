import CheckedMath
import Foundation
import Logging
import Plumbing
import Recorder
import Synchronization

/// Who may use the web server, as the index says: the users, their API tokens and their browser
/// sessions, read into memory and read again at most every `refreshNanos` while requests come,
/// so `vigil user remove`, `vigil token revoke` and `vigil session revoke` (other processes)
/// take effect within that time without a restart. Every secret is compared by its SHA-256
/// (`AccessSecret`); passwords by scrypt (`PasswordHash`), one at a time on a lane of their own.
///
/// Sessions expire after `Limits.idleNanos` without a request and `Limits.lifetimeNanos` after
/// login, whichever is first. Their last use is kept in memory and written at most every
/// `flushNanos` (a write per request would be a write per video segment played).
public final class AccessBook: Sendable {
    public struct Limits: Sendable {
        public var idleNanos: Int64
        public var lifetimeNanos: Int64
        public init(idleNanos: Int64, lifetimeNanos: Int64) {
            self.idleNanos = idleNanos
            self.lifetimeNanos = lifetimeNanos
        }
    }

    struct Snapshot: Sendable {
        var users: [String: RecordingIndex.UserRow] = [:]
        var tokens: [String: RecordingIndex.TokenRow] = [:]
        var sessions: [String: RecordingIndex.SessionRow] = [:]
        var loadedAt: Int64 = 0
    }

    private struct State {
        var snapshot: Snapshot?
        /// Sessions' last use since the last write, by hash.
        var touched: [String: Int64] = [:]
        var lastFlush: Int64 = 0
        /// Sessions this server began (a row) or ended (nil) lately, by hash, with when: laid
        /// over a reload that read the index before the write, so a new session is never lost
        /// to a reload already under way, nor an ended one brought back.
        var recent: [String: (row: RecordingIndex.SessionRow?, at: Int64)] = [:]

        mutating func note(_ hash: String, _ row: RecordingIndex.SessionRow?, at now: Int64) {
            forgetOld(now)
            recent[hash] = (row, now)
            snapshot?.sessions[hash] = row
            if row == nil { touched[hash] = nil }
        }

        /// A change older than two refreshes is in every read that began after it.
        mutating func forgetOld(_ now: Int64) {
            recent = recent.filter { now - $0.value.at < 2 * AccessBook.refreshNanos }
        }

        mutating func store(_ fresh: Snapshot) {
            // Two reloads at once: the one that read later wins, whichever returns first.
            if let current = snapshot, current.loadedAt > fresh.loadedAt { return }
            forgetOld(fresh.loadedAt)
            var fresh = fresh
            for (hash, change) in recent { fresh.sessions[hash] = change.row }
            snapshot = fresh
        }
    }

    static let refreshNanos: Int64 = 2_000_000_000
    static let flushNanos: Int64 = 60_000_000_000

    private let index: RecordingIndex
    private let tokenFileDigest: String?
    private let limits: Limits
    private let reads: BlockingIO
    private let writes: BlockingIO
    /// Password checks: one at a time, so logins never hold more than one hash's memory.
    private let passwords = BlockingIO("vigil.http.password")
    /// Wall-clock nanoseconds (tests give their own).
    private let now: @Sendable () -> Int64
    private let state = Mutex(State())
    private let logger = Logger(label: "vigil.http")

    /// `tokenFile`: the token of `[http] token_file` (an admin's), nil without one. `reads` and
    /// `writes`: the web server's lanes for the index.
    public init(index: RecordingIndex, tokenFile: String?, limits: Limits, reads: BlockingIO, writes: BlockingIO,
                now: @escaping @Sendable () -> Int64) {
        self.index = index
        tokenFileDigest = tokenFile.map(AccessSecret.digest)
        self.limits = limits
        self.reads = reads
        self.writes = writes
        self.now = now
    }

    /// True when a request must prove who it is: a token file is set, or the index has users.
    public func isRequired() async -> Bool {
        if tokenFileDigest != nil { return true }
        return await snapshot().map { !$0.users.isEmpty } ?? true
    }

    /// The identity of an API token (`Authorization: Bearer`): token_file's, or one of `vigil token add`.
    public func identity(bearer token: String) async -> Identity? {
        let digest = AccessSecret.digest(token)
        if digest == tokenFileDigest { return .tokenFile }
        guard let snapshot = await snapshot(), let row = snapshot.tokens[digest], let user = snapshot.users[row.user],
              let role = Role(rawValue: user.role) else { return nil }
        return Identity(user: user.name, role: role, credential: "token \(row.name)")
    }

    /// The identity of a session cookie; nil when it is unknown, revoked or expired. Counts as its use.
    public func identity(session id: String) async -> Identity? {
        let digest = AccessSecret.digest(id)
        guard let snapshot = await snapshot(), let row = snapshot.sessions[digest] else { return nil }
        let now = now()
        let lastUse = state.withLock { $0.touched[digest].map { max(row.lastUsedNanos, $0) } ?? row.lastUsedNanos }
        // Times from a row of the index file: subtracted with a check (a row holding Int64.min would trap).
        guard let idle = now.subtracting(lastUse), idle < limits.idleNanos,
              let age = now.subtracting(row.createdNanos), age < limits.lifetimeNanos, age > -limits.lifetimeNanos,
              stands(row.credential, in: snapshot),
              let role = role(of: row.user, in: snapshot) else { return nil }
        state.withLock { $0.touched[digest] = now }
        return Identity(user: row.user, role: role, credential: "session \(Identity.sessionID(hash: digest))", sessionHash: digest)
    }

    /// Checks a user's password; on success, a new session for them (its id goes in the cookie).
    public func login(user name: String, password: String, address: String, userAgent: String) async -> (id: String, identity: Identity)? {
        let user = await snapshot()?.users[name]
        let stored = user?.password ?? PasswordHash.decoy
        let matches = await passwords.run { PasswordHash.verify(password, against: stored) }
        guard matches, let user, Role(rawValue: user.role) != nil else { return nil }
        return await startSession(for: user.name, credential: "password", address: address, userAgent: userAgent)
    }

    /// An API token typed into the form (token_file's, as before users existed): a new session for its user.
    public func login(token: String, address: String, userAgent: String) async -> (id: String, identity: Identity)? {
        guard let identity = await identity(bearer: token) else { return nil }
        return await startSession(for: identity.user, credential: "token " + AccessSecret.digest(token), address: address, userAgent: userAgent)
    }

    /// Ends the session `identity` came with (logging out).
    public func logout(_ identity: Identity) async {
        guard let hash = identity.sessionHash else { return }
        _ = await writing { try $0.removeSessions(hashPrefix: hash) }
        let now = now()
        state.withLock { $0.note(hash, nil, at: now) }
    }

    private func startSession(for user: String, credential: String, address: String, userAgent: String) async -> (id: String, identity: Identity)? {
        let id = AccessSecret.make()
        let now = now()
        let row = RecordingIndex.SessionRow(
            hash: AccessSecret.digest(id), user: user, createdNanos: now, lastUsedNanos: now, address: address, userAgent: String(userAgent.prefix(200)),
            credential: credential)
        guard await writing({ try $0.putSession(row) }) != nil else { return nil }
        state.withLock { $0.note(row.hash, row, at: now) }
        return await identity(session: id).map { (id, $0) }
    }

    /// A session begun with a token lasts only while the token does: revoked, or token_file
    /// changed (a leaked token's sessions end with it). One begun with a password lasts while its
    /// user does (`role(of:)`; `vigil user passwd` ends them).
    private func stands(_ credential: String, in snapshot: Snapshot) -> Bool {
        guard credential.hasPrefix("token ") else { return credential == "password" }
        let digest = String(credential.dropFirst(6))
        return digest == tokenFileDigest || snapshot.tokens[digest] != nil
    }

    private func role(of user: String, in snapshot: Snapshot) -> Role? {
        user == Identity.tokenFile.user ? .admin : snapshot.users[user].flatMap { Role(rawValue: $0.role) }
    }

    /// The users, tokens and sessions, read again when the copy is older than `refreshNanos`;
    /// nil when the index has never been readable (then only token_file's token is known).
    private func snapshot() async -> Snapshot? {
        let now = now()
        let (current, flush) = state.withLock { state -> (Snapshot?, [String: Int64]?) in
            var flush: [String: Int64]?
            if now - state.lastFlush >= Self.flushNanos {
                flush = state.touched
                state.touched = [:]
                state.lastFlush = now
            }
            return (state.snapshot, flush)
        }
        if let flush {
            let limits = limits
            _ = await writing {
                try $0.touchSessions(flush)
                _ = try $0.removeSessions(idleBefore: now - limits.idleNanos, createdBefore: now - limits.lifetimeNanos)
            }
        }
        if let current, now - current.loadedAt < Self.refreshNanos, now >= current.loadedAt { return current }
        let index = index
        let loaded = await reads.run { Result { try Snapshot(index: index, at: now) } }
        switch loaded {
        case .success(let fresh):
            return state.withLock {
                $0.store(fresh)
                return $0.snapshot
            }
        case .failure(let error):
            logger.error("the users and sessions cannot be read from the index: \(error)")
            return current
        }
    }

    private func writing<T: Sendable>(_ work: @escaping @Sendable (RecordingIndex) throws -> T) async -> T? {
        let index = index
        switch await writes.run({ Result { try work(index) } }) {
        case .success(let value): return value
        case .failure(let error):
            logger.error("the users and sessions cannot be written to the index: \(error)")
            return nil
        }
    }
}

extension AccessBook.Snapshot {
    init(index: RecordingIndex, at now: Int64) throws {
        users = Dictionary(try index.users().map { ($0.name, $0) }, uniquingKeysWith: { a, _ in a })
        tokens = Dictionary(try index.tokens().map { ($0.hash, $0) }, uniquingKeysWith: { a, _ in a })
        sessions = Dictionary(try index.sessions().map { ($0.hash, $0) }, uniquingKeysWith: { a, _ in a })
        loadedAt = now
    }
}
