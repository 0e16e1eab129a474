import Access
import CaptureTesting
import Foundation
import Hummingbird
import HummingbirdTesting
import Recorder
import Testing
@testable import WebServer

/// Users with roles, API tokens and sessions (issue 39): before, one shared token was every
/// browser's cookie for 30 days, nobody could be told apart, and nothing could be revoked.
@Suite(.timeLimit(.minutes(2))) struct AccessTests {
    static let page: HTTPFields = [.referer: "http://localhost/"]
    static let form: HTTPFields = [.contentType: "application/x-www-form-urlencoded", .origin: "http://localhost"]
    /// A cheap scrypt cost for tests (the stored form carries it; the server reads it back).
    static let quick = PasswordHash(log2N: 10, r: 8, p: 1)

    /// Adds the admin "ana" and the viewer "door" (passwords "ana-password", "door-password").
    static func addUsers(_ index: RecordingIndex) throws {
        for (name, role) in [("ana", Role.admin), ("door", Role.viewer)] {
            try index.putUser(.init(name: name, role: role.rawValue, password: try quick.hash("\(name)-password"), createdNanos: 1))
        }
    }

    static func login(_ client: any TestClientProtocol, _ user: String, _ password: String? = nil) async throws -> String {
        try await AuthTests.login(client, body: "user=\(user)&password=\(password ?? "\(user)-password")")
    }

    private func withUsers(_ http: HTTPSettings = HTTPSettings(), _ body: @escaping @Sendable (any TestClientProtocol, RecordingIndex, [Int64]) async throws -> Void) async throws {
        let recording = try await Recording.start(segments: 0)
        defer { recording.remove() }
        await recording.stop()
        let index = recording.keeper.index
        try Self.addUsers(index)
        let events = try EventReviewTests.addEvents(index)
        try await recording.server(http).application().test(.router) { client in try await body(client, index, events) }
    }

    @Test func withUsersEvenLoopbackAsksWhoYouAre() async throws {
        try await withUsers { client, _, _ in
            try await client.execute(uri: "/api/v1/cameras", method: .get) { #expect($0.status == .unauthorized) }
            try await client.execute(uri: "/", method: .get) { response in
                #expect(response.status == .unauthorized)
                #expect(String(buffer: response.body).contains("name=\"user\""))
            }
            try await client.execute(uri: "/login", method: .post, headers: Self.form, body: ByteBuffer(string: "user=ana&password=wrong-password")) { response in
                #expect(response.status == .unauthorized)
                #expect(response.headers[.setCookie] == nil)
            }
            try await client.execute(uri: "/login", method: .post, headers: Self.form, body: ByteBuffer(string: "user=nobody&password=ana-password")) {
                #expect($0.status == .unauthorized)
            }
        }
    }

    @Test func aViewerWatchesButOnlyAnAdminMarksDownloadsAndReadsTheTrail() async throws {
        try await withUsers { client, _, events in
            let viewer = try await Self.login(client, "door"), admin = try await Self.login(client, "ana")
            try await client.execute(uri: "/api/v1/session", method: .get, headers: Self.page + [.cookie: viewer]) { response in
                #expect(response.json()["user"] as? String == "door")
                #expect(response.json()["role"] as? String == "viewer")
            }
            try await client.execute(uri: "/api/v1/cameras", method: .get, headers: Self.page + [.cookie: viewer]) { #expect($0.status == .ok) }
            try await client.execute(uri: "/api/v1/events", method: .get, headers: Self.page + [.cookie: viewer]) { #expect($0.status == .ok) }
            let mark = "/api/v1/events/\(events[0])/reviewed"
            let clip = "/api/v1/cameras/\(Recording.camera)/clip.mp4"
            let refused = [(mark, HTTPRequest.Method.post), (clip, .get), ("/api/v1/audit", .get)]
            for (uri, method) in refused {
                try await client.execute(uri: uri, method: method, headers: Self.form + [.cookie: viewer]) { response in
                    #expect(response.status == .forbidden, "\(uri)")
                    #expect(response.errorMessage?.contains("door is a viewer") == true, "\(response.errorMessage ?? "")")
                }
            }
            // The role is decided by the route matched, not the path as written.
            for uri in ["/api/v1/audit/", "//api/v1/audit", "/api//v1/audit", "/api/v1/cameras/\(Recording.camera)/clip.mp4/"] {
                try await client.execute(uri: uri, method: .get, headers: Self.page + [.cookie: viewer]) { #expect($0.status == .forbidden, "\(uri)") }
            }
            try await client.execute(uri: mark, method: .post, headers: Self.form + [.cookie: admin]) { #expect($0.status == .ok) }
            try await client.execute(uri: "/api/v1/audit", method: .get, headers: Self.page + [.cookie: admin]) { #expect($0.status == .ok) }
        }
    }

    /// The cookie is an opaque random id, not the password or a token; the index keeps only its
    /// SHA-256, with who, when and from what browser.
    @Test func aSessionIsARandomIdStoredOnlyAsItsHash() async throws {
        try await withUsers { client, index, _ in
            let first = try await Self.login(client, "ana"), second = try await Self.login(client, "ana")
            let ids = [first, second].map { String($0.dropFirst("vigil_session=".count)) }
            #expect(ids[0] != ids[1] && ids.allSatisfy { $0.count == 43 && !$0.contains("ana") })
            let rows = try index.sessions()
            #expect(Set(rows.map(\.hash)) == Set(ids.map(AccessSecret.digest)))
            #expect(rows.allSatisfy { $0.user == "ana" && !ids.contains($0.hash) })
        }
    }

    /// Logging out ends the session for good (the same cookie is refused afterwards), and so
    /// does `vigil session revoke` from another process (within the book's refresh).
    @Test func logoutAndRevocationEndASession() async throws {
        try await withUsers { client, index, _ in
            let cookie = try await Self.login(client, "ana")
            try await client.execute(uri: "/logout", method: .post, headers: Self.form + [.cookie: cookie]) { #expect($0.status == .seeOther) }
            try await client.execute(uri: "/api/v1/cameras", method: .get, headers: Self.page + [.cookie: cookie]) { #expect($0.status == .unauthorized) }
            #expect(try index.sessions().isEmpty)
            let other = try await Self.login(client, "door")
            try await client.execute(uri: "/api/v1/cameras", method: .get, headers: Self.page + [.cookie: other]) { #expect($0.status == .ok) }
            let hash = try #require(try index.sessions().first?.hash)
            #expect(try index.removeSessions(hashPrefix: Identity.sessionID(hash: hash)) == 1)
            let refused = try await waitUntil(seconds: 10) {
                try await client.execute(uri: "/api/v1/cameras", method: .get, headers: Self.page + [.cookie: other]) { $0.status == .unauthorized }
            }
            #expect(refused, "a session revoked in the index is refused once the server reads it again")
        }
    }

    /// API tokens act as their user, with that user's role, and stop working when revoked.
    @Test func anAPITokenIsItsUsersAndRevocable() async throws {
        try await withUsers { client, index, events in
            let token = AccessSecret.make()
            try index.putToken(.init(name: "door-script", user: "door", hash: AccessSecret.digest(token), createdNanos: 1))
            let bearer: HTTPFields = [.authorization: "Bearer \(token)"]
            let served = try await waitUntil(seconds: 10) {
                try await client.execute(uri: "/api/v1/cameras", method: .get, headers: bearer) { $0.status == .ok }
            }
            #expect(served)
            try await client.execute(uri: "/api/v1/events/\(events[0])/reviewed", method: .post, headers: bearer) { #expect($0.status == .forbidden) }
            #expect(try index.removeToken(named: "door-script"))
            let refused = try await waitUntil(seconds: 10) {
                try await client.execute(uri: "/api/v1/cameras", method: .get, headers: bearer) { $0.status == .unauthorized }
            }
            #expect(refused)
            #expect(try index.tokens().isEmpty && !(try index.tokens().contains { $0.hash == token }))
        }
    }

    /// The trail says who logged in or failed to, marked what, and was refused what; admins read it.
    @Test func theAuditTrailSaysWhoDidWhat() async throws {
        try await withUsers { client, _, events in
            try await client.execute(uri: "/login", method: .post, headers: Self.form, body: ByteBuffer(string: "user=door&password=guess-guess")) {
                #expect($0.status == .unauthorized)
            }
            let viewer = try await Self.login(client, "door"), admin = try await Self.login(client, "ana")
            try await client.execute(uri: "/api/v1/cameras/\(Recording.camera)/clip.mp4", method: .get, headers: Self.page + [.cookie: viewer]) {
                #expect($0.status == .forbidden)
            }
            try await client.execute(uri: "/api/v1/events/\(events[1])/reviewed", method: .post, headers: Self.form + [.cookie: admin]) { #expect($0.status == .ok) }
            let entries = try await client.execute(uri: "/api/v1/audit", method: .get, headers: Self.page + [.cookie: admin]) { response in
                try #require(response.json()["entries"] as? [[String: String]])
            }
            let lines = entries.map { "\($0["user"] ?? "") \($0["action"] ?? "") \($0["subject"] ?? "") \($0["outcome"] ?? "")" }
            for expected in ["door login-failed  wrong name or password", "door login  ok", "ana login  ok",
                             "door clip \(Recording.camera) from ? to ? 403 viewer", "ana mark event \(events[1]) ok"] {
                #expect(lines.contains(expected), "\(expected) in \(lines)")
            }
            #expect(entries.allSatisfy { $0["credential"]?.isEmpty == false && $0["at"]?.isEmpty == false })
            try await client.execute(uri: "/api/v1/audit?user=ana&limit=1", method: .get, headers: Self.page + [.cookie: admin]) { response in
                let rows = response.json()["entries"] as? [[String: String]]
                #expect(rows?.count == 1 && rows?.first?["user"] == "ana", "\(rows ?? [])")
            }
            try await client.execute(uri: "/api/v1/audit?limit=0", method: .get, headers: Self.page + [.cookie: admin]) { #expect($0.status == .badRequest) }
        }
    }
}
