import Access
import CaptureTesting
import Foundation
import Plumbing
import Recorder
import Synchronization
import Testing

/// The book of users, tokens and sessions, and the audit trail, on a clock the test moves.
@Suite struct AccessBookTests {
    static let hour: Int64 = 3_600_000_000_000
    static let lanes = BlockingIO("tests.access", width: 2)
    static let writes = BlockingIO("tests.access.write")

    private func book(_ index: RecordingIndex, _ clock: LoginThrottleTests.Clock, tokenFile: String? = nil) -> AccessBook {
        AccessBook(index: index, tokenFile: tokenFile, limits: .init(idleNanos: 2 * Self.hour, lifetimeNanos: 10 * Self.hour),
                   reads: Self.lanes, writes: Self.writes, now: { clock.now })
    }

    /// A session ends after its idle limit without use, and at its lifetime however much it is used.
    @Test func sessionsEndWhenIdleAndAtTheirLifetime() async throws {
        let dir = try TemporaryDirectory()
        defer { dir.remove() }
        let index = try RecordingIndex(root: dir.path)
        let clock = LoginThrottleTests.Clock()
        let book = book(index, clock, tokenFile: AuthTests.token)
        let idle = try #require(await book.login(token: AuthTests.token, address: "10.0.0.1", userAgent: "test"))
        #expect(idle.identity.user == "token_file" && idle.identity.role == .admin)
        clock.advance(seconds: 7_100)
        #expect(await book.identity(session: idle.id) != nil, "used within its idle limit")
        clock.advance(seconds: 7_300)
        #expect(await book.identity(session: idle.id) == nil, "idle longer than 2 hours")

        let busy = try #require(await book.login(token: AuthTests.token, address: "10.0.0.1", userAgent: "test"))
        for _ in 0..<9 {
            clock.advance(seconds: 3_600)
            #expect(await book.identity(session: busy.id) != nil)
        }
        clock.advance(seconds: 3_600)
        #expect(await book.identity(session: busy.id) == nil, "ten hours after login, however busy")
        #expect(await book.login(token: "not-the-token-0123456789", address: "10.0.0.1", userAgent: "test") == nil)
    }

    /// A session begun with a token ends with it: token_file changed (a leaked token's
    /// sessions once outlived it for 30 days), or an API token revoked.
    @Test func aSessionBegunWithATokenEndsWithIt() async throws {
        let dir = try TemporaryDirectory()
        defer { dir.remove() }
        let index = try RecordingIndex(root: dir.path)
        try AccessTests.addUsers(index)
        let clock = LoginThrottleTests.Clock()
        let before = book(index, clock, tokenFile: AuthTests.token)
        let leaked = try #require(await before.login(token: AuthTests.token, address: "a", userAgent: ""))
        let after = book(index, clock, tokenFile: "a-new-token-0123456789abcdef")
        #expect(await after.identity(session: leaked.id) == nil, "token_file changed: its sessions end")
        let token = AccessSecret.make()
        try index.putToken(.init(name: "script", user: "ana", hash: AccessSecret.digest(token), createdNanos: 1))
        clock.advance(seconds: 3)
        let viaToken = try #require(await after.login(token: token, address: "a", userAgent: ""))
        #expect(await after.identity(session: viaToken.id)?.user == "ana")
        #expect(try index.removeToken(named: "script"))
        clock.advance(seconds: 5)
        #expect(await after.identity(session: viaToken.id) == nil, "the token revoked: its sessions end")
    }

    /// A session row's times are outside input (the index is a file): absurd ones end the
    /// session, never trap.
    @Test func absurdTimesInASessionRowEndItWithoutATrap() async throws {
        let dir = try TemporaryDirectory()
        defer { dir.remove() }
        let index = try RecordingIndex(root: dir.path)
        let clock = LoginThrottleTests.Clock()
        let book = book(index, clock, tokenFile: AuthTests.token)
        var ids: [String] = []
        for (created, used) in [(Int64.min, Int64.min), (Int64.max, Int64.max), (Int64.min, clock.now), (clock.now, Int64.min)] {
            let id = AccessSecret.make()
            ids.append(id)
            try index.putSession(.init(hash: AccessSecret.digest(id), user: "token_file", createdNanos: created, lastUsedNanos: used,
                                       address: "a", userAgent: "", credential: "token " + AccessSecret.digest(AuthTests.token)))
        }
        for (n, id) in ids.enumerated() { #expect(await book.identity(session: id) == nil, "row \(n)") }
    }

    /// Passwords are checked against scrypt hashes; a removed user's sessions and tokens go with them.
    @Test func passwordsAndRemovedUsers() async throws {
        let dir = try TemporaryDirectory()
        defer { dir.remove() }
        let index = try RecordingIndex(root: dir.path)
        try AccessTests.addUsers(index)
        let clock = LoginThrottleTests.Clock()
        let book = book(index, clock)
        #expect(await book.isRequired())
        #expect(await book.login(user: "door", password: "ana-password", address: "a", userAgent: "") == nil)
        #expect(await book.login(user: "nobody", password: "door-password", address: "a", userAgent: "") == nil)
        let session = try #require(await book.login(user: "door", password: "door-password", address: "a", userAgent: ""))
        #expect(session.identity.role == .viewer && session.identity.credential.hasPrefix("session "))
        #expect(try index.removeUser(named: "door"))
        clock.advance(seconds: 5)
        #expect(await book.identity(session: session.id) == nil)
        #expect(try index.removeUser(named: "ana") && !(try index.removeUser(named: "ana")))
        clock.advance(seconds: 5)
        #expect(await book.isRequired() == false, "no users and no token file: nothing to ask")
    }

    @Test func storedFormsOutsideTheirBoundsNeverMatch() throws {
        let good = try AccessTests.quick.hash("password-1")
        #expect(PasswordHash.verify("password-1", against: good))
        #expect(!PasswordHash.verify("password-2", against: good))
        let parts = good.split(separator: "$").map(String.init)
        for bad in ["", "scrypt", "bcrypt$10$8$1$\(parts[4])$\(parts[5])", "scrypt$20$32$1$\(parts[4])$\(parts[5])",
                    "scrypt$9$8$1$\(parts[4])$\(parts[5])", "scrypt$10$8$1$\(parts[4])$AAAA", "scrypt$10$8$1$!!$\(parts[5])"] {
            #expect(!PasswordHash.verify("password-1", against: bad), "\(bad)")
        }
    }

    /// Watching is written once per user, thing and 10 minutes; everything else each time.
    @Test func theTrailWritesWatchingOncePerTenMinutes() async throws {
        let dir = try TemporaryDirectory()
        defer { dir.remove() }
        let index = try RecordingIndex(root: dir.path)
        let clock = LoginThrottleTests.Clock()
        let audit = AuditLog(index: index, writes: Self.writes, retentionNanos: 24 * Self.hour, now: { clock.now })
        let ana = Identity(user: "ana", role: .admin, credential: "session 1a2b3c4d")
        for _ in 0..<5 { audit.record(ana, address: "10.0.0.1", .play, subject: "recording 7") }
        audit.record(ana, address: "10.0.0.1", .play, subject: "recording 8")
        audit.record(ana, address: "10.0.0.1", .mark, subject: "event 1")
        audit.record(ana, address: "10.0.0.1", .mark, subject: "event 1")
        clock.advance(seconds: 601)
        audit.record(ana, address: "10.0.0.1", .play, subject: "recording 7")
        let rows = try await audit.rows(since: 0, user: nil, limit: 100)
        #expect(rows.map { "\($0.action) \($0.subject)" } == ["play recording 7", "play recording 8", "mark event 1", "mark event 1", "play recording 7"])
        #expect(try await audit.rows(since: 0, user: "door", limit: 100).isEmpty)
        // Past its retention (24 hours here) the trail is pruned as it is written.
        clock.advance(seconds: 25 * 3_600)
        audit.record(ana, address: "10.0.0.1", .logout, subject: "")
        #expect(try await audit.rows(since: 0, user: nil, limit: 100).map(\.action) == ["logout"])
    }
}
