import CaptureTesting
import Foundation
import Hummingbird
import HummingbirdTesting
import Recorder
import Testing
@testable import WebServer

/// Logins over real sockets from more than one address (127.0.0.1 and 127.0.0.3): the throttle
/// per address and per user, and what a trusted reverse proxy may say about the client.
@Suite(.timeLimit(.minutes(2))) struct AccessSocketTests {
    struct Answer {
        let code: String
        let headers: String
    }

    /// `curl` posting the login form from `source`, with extra `headers`.
    private static func login(port: Int, from source: String, _ body: String, headers: [String] = [], dir: TemporaryDirectory) async throws -> Answer {
        let extra = headers.flatMap { ["-H", $0] }
        let code = try await curl(["-s", "-X", "POST", "-w", "%{http_code}", "--max-time", "5", "--interface", source, "-D", dir.path + "/headers",
                                   "-H", "Origin: http://127.0.0.1:\(port)", "-d", body] + extra + ["http://127.0.0.1:\(port)/login"],
                                  output: dir.path + "/body").written
        return Answer(code: code, headers: (try? String(contentsOfFile: dir.path + "/headers", encoding: .utf8)) ?? "")
    }

    private func withUsers(
        _ http: HTTPSettings, clock: LoginThrottleTests.Clock = .init(), segments: Int = 0,
        _ body: @escaping @Sendable (Int, RecordingIndex, TemporaryDirectory) async throws -> Void
    ) async throws {
        let recording = try await Recording.start(segments: segments)
        defer { recording.remove() }
        let dir = try TemporaryDirectory()
        defer { dir.remove() }
        try AccessTests.addUsers(recording.keeper.index)
        var server = recording.server(http)
        server.loginThrottle = LoginThrottle(now: { clock.now })
        try await recording.stopping {
            try await server.application().test(.live) { client in try await body(client.port!, recording.keeper.index, dir) }
        }
    }

    /// Wrong passwords for one user wait for that user from any address (a spread-out guess
    /// is held back too), while other users and addresses log in; after the wait, the real
    /// user logs in: nobody is locked out for good.
    @Test func wrongPasswordsWaitPerUserAndPerAddress() async throws {
        let clock = LoginThrottleTests.Clock()
        var http = HTTPSettings()
        http.listen = "0.0.0.0:0"
        try await withUsers(http, clock: clock) { port, _, dir in
            var codes: [String] = []
            for _ in 0..<4 { codes.append(try await Self.login(port: port, from: "127.0.0.1", "user=ana&password=guess-\(codes.count)", dir: dir).code) }
            #expect(codes == ["401", "401", "401", "401"])
            let elsewhere = try await Self.login(port: port, from: "127.0.0.3", "user=ana&password=ana-password", dir: dir)
            #expect(elsewhere.code == "429" && elsewhere.headers.lowercased().contains("retry-after: 1\r\n"), "\(elsewhere)")
            #expect(try await Self.login(port: port, from: "127.0.0.3", "user=door&password=door-password", dir: dir).code == "303")
            #expect(try await Self.login(port: port, from: "127.0.0.1", "user=door&password=door-password", dir: dir).code == "429",
                    "the guessing address waits whoever it names")
            clock.advance(seconds: 1)
            #expect(try await Self.login(port: port, from: "127.0.0.3", "user=ana&password=ana-password", dir: dir).code == "303")
        }
    }

    /// Behind a trusted proxy, its X-Forwarded-For is the client's address (throttle, trail,
    /// sessions) and X-Forwarded-Proto: https makes the cookie Secure; from anyone else both
    /// headers are ignored.
    @Test func onlyATrustedProxySaysTheAddressAndHTTPS() async throws {
        var http = HTTPSettings()
        http.listen = "0.0.0.0:0"
        http.trustedProxies = ["127.0.0.1"]
        try await withUsers(http) { port, index, dir in
            let forwarded = ["X-Forwarded-For: 203.0.113.50, 198.51.100.7", "X-Forwarded-Proto: https"]
            let proxied = try await Self.login(port: port, from: "127.0.0.1", "user=ana&password=ana-password", headers: forwarded, dir: dir)
            let cookie = try #require(proxied.headers.split(separator: "\r\n").first { $0.lowercased().hasPrefix("set-cookie: ") })
            #expect(proxied.code == "303" && cookie.hasSuffix("; Secure"), "\(cookie)")
            let direct = try await Self.login(port: port, from: "127.0.0.3", "user=door&password=door-password", headers: forwarded, dir: dir)
            let plain = try #require(direct.headers.split(separator: "\r\n").first { $0.lowercased().hasPrefix("set-cookie: ") })
            #expect(direct.code == "303" && !plain.contains("Secure"), "\(plain)")
            let addresses = Dictionary(try index.sessions().map { ($0.user, $0.address) }, uniquingKeysWith: { a, _ in a })
            #expect(addresses == ["ana": "198.51.100.7", "door": "127.0.0.3"])
            let trail = try await waitUntil(seconds: 10) {
                Set(try index.audit(since: 0, user: nil, limit: 10).map { "\($0.user) \($0.address)" }) == ["ana 198.51.100.7", "door 127.0.0.3"]
            }
            #expect(trail, "\((try? index.audit(since: 0, user: nil, limit: 10)) ?? [])")
        }
    }

    /// What a trusted proxy says is read strictly: the last address of X-Forwarded-For, an
    /// address and nothing else (a NUL inside once passed, as inet_pton stops at it).
    @Test func forwardedHeadersAreReadStrictly() {
        #expect(ForwardedFor.client("203.0.113.50, 198.51.100.7") == "198.51.100.7")
        #expect(ForwardedFor.client(" [2001:db8::1] ") == "2001:db8::1")
        for refused in ["", "unknown", "10.0.0.1:443", "10.0.0.1,", "evil.example", "2001::\u{0}v22  1", "127.0.0.1\u{0}.evil.example"] {
            #expect(ForwardedFor.client(refused) == nil, "\(refused)")
        }
        #expect(ForwardedFor.isHTTPS("http, HTTPS") && !ForwardedFor.isHTTPS("https, http"))
        #expect(!HTTPSettings.isLoopback("127.0.0.1\u{0}.evil.example") && HTTPSettings.isLoopback("127.0.0.1"))
    }

    /// Watching is in the trail: live video (here MJPEG) and a recording played, once per user,
    /// thing and 10 minutes however many requests a player makes.
    @Test func watchingLiveAndPlayingAreWrittenOnce() async throws {
        var http = HTTPSettings()
        http.listen = "127.0.0.1:0"
        try await withUsers(http, segments: 1) { port, index, dir in
            let login = try await Self.login(port: port, from: "127.0.0.1", "user=door&password=door-password", dir: dir)
            let cookie = try #require(login.headers.split(separator: "\r\n").first { $0.hasPrefix("Set-Cookie: ") }?.dropFirst(12).split(separator: ";").first)
            let segment = try #require(try index.entries(kind: .segment, states: [.complete]).first)
            let page = ["-H", "Cookie: \(cookie)", "-H", "Referer: http://127.0.0.1:\(port)/"]
            for _ in 0..<2 {
                _ = try await curl(["-s", "--max-time", "2"] + page + ["http://127.0.0.1:\(port)/api/v1/cameras/\(Recording.camera)/live.mjpeg"], output: "/dev/null")
                let played = try await curl(["-s", "-w", "%{http_code}", "-r", "0-99"] + page + ["http://127.0.0.1:\(port)/api/v1/recordings/\(segment.id)/file"],
                                            output: "/dev/null")
                #expect(played.written == "206")
            }
            let written = try await waitUntil(seconds: 10) { try index.audit(since: 0, user: "door", limit: 10).count >= 3 }
            let trail = try index.audit(since: 0, user: "door", limit: 10).map { "\($0.action) \($0.subject) \($0.outcome)" }
            #expect(written && trail.sorted() == ["live \(Recording.camera) ok", "login  ok", "play recording \(segment.id) ok"], "\(trail)")
        }
    }
}
