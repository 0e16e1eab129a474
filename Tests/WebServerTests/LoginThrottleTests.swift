import CaptureTesting
import Foundation
import Hummingbird
import HummingbirdTesting
import Recorder
import Synchronization
import Testing
@testable import WebServer

/// Wrong tokens at the login form: 300 of them at 271/s met no throttle. Now three are free,
/// then each failure doubles the wait (to 5 minutes at most), answered 429 with Retry-After;
/// the right token resets it, and a quiet quarter of an hour forgets it.
@Suite struct LoginThrottleTests {
    /// A clock the test moves.
    final class Clock: Sendable {
        let nanos = Mutex<Int64>(1_000_000_000)
        func advance(seconds: Int64) { nanos.withLock { $0 += seconds * 1_000_000_000 } }
        var now: Int64 { nanos.withLock { $0 } }
    }

    @Test func waitsDoubleAfterThreeFreeTriesAndEnd() {
        let clock = Clock()
        let throttle = LoginThrottle(now: { clock.now })
        for _ in 0..<3 { throttle.failed("10.0.0.1") }
        #expect(throttle.wait(for: "10.0.0.1") == nil, "three tries are free")
        var waits: [Int64] = []
        for _ in 0..<12 {
            throttle.failed("10.0.0.1")
            let wait = throttle.wait(for: "10.0.0.1") ?? 0
            waits.append(wait)
            clock.advance(seconds: wait)
            #expect(throttle.wait(for: "10.0.0.1") == nil, "after its wait, an address may try again")
        }
        #expect(waits == [1, 2, 4, 8, 16, 32, 64, 128, 256, 300, 300, 300], "\(waits)")
        #expect(throttle.wait(for: "10.0.0.2") == nil, "another address is not held back")
        // Quiet for a quarter of an hour: forgotten, three free tries again.
        clock.advance(seconds: 901)
        for _ in 0..<3 { throttle.failed("10.0.0.1") }
        #expect(throttle.wait(for: "10.0.0.1") == nil)
        // The right token starts the count again.
        throttle.failed("10.0.0.1")
        #expect(throttle.wait(for: "10.0.0.1") == 1)
        throttle.succeeded("10.0.0.1")
        #expect(throttle.wait(for: "10.0.0.1") == nil)
        // A flood of addresses keeps at most maxAddresses.
        for n in 0..<(LoginThrottle.maxAddresses + 50) { throttle.failed("addr-\(n)") }
        #expect(throttle.wait(for: "addr-\(LoginThrottle.maxAddresses + 49)") == nil)
    }

    /// An IPv6 client counts by its /64: a new address of the same network each try is the same client.
    @Test func anIPv6ClientCountsByItsSlash64() {
        let clock = Clock()
        let throttle = LoginThrottle(now: { clock.now })
        for n in 1...4 { throttle.failed("2001:db8:1:2::\(n)") }
        #expect(throttle.wait(for: "2001:db8:1:2:ffff::9") == 1)
        #expect(throttle.wait(for: "2001:db8:1:3::1") == nil, "another /64")
        #expect(LoginThrottle.key("2001:0db8:0001:0002:0000:0000:0000:0001") == "2001:db8:1:2::/64")
        #expect(LoginThrottle.key("10.0.0.1") == "10.0.0.1" && LoginThrottle.key("user a:b") == "user a:b")
        #expect(LoginThrottle.key("::ffff:192.0.2.7") == "192.0.2.7", "an IPv4 client of a dual-stack listener is its IPv4 address")
    }

    /// Over HTTP: after the fourth wrong token from one address, its next try is answered 429
    /// with Retry-After, the right token too (the wait is the address's, whatever it sends); once
    /// the wait is over (the test's clock moves), the right token logs in.
    @Test func theFormAnswers429WithRetryAfter() async throws {
        let dir = try TemporaryDirectory()
        defer { dir.remove() }
        let clock = Clock()
        try await withTokenServer(clock, .live) { client in
            func login(_ token: String) async throws -> (code: String, headers: String) {
                let code = try await curl(["-s", "-X", "POST", "-w", "%{http_code}", "--max-time", "5", "-D", dir.path + "/headers", "-d", "token=\(token)",
                                           "http://127.0.0.1:\(client.port!)/login"], output: dir.path + "/body").written
                return (code, (try? String(contentsOfFile: dir.path + "/headers", encoding: .utf8)) ?? "")
            }
            var codes: [String] = []
            for _ in 0..<4 { codes.append(try await login("wrong-guess").code) }
            #expect(codes == ["401", "401", "401", "401"], "\(codes)")
            for token in ["wrong-guess", AuthTests.token] {
                let answer = try await login(token)
                #expect(answer.code == "429", "\(answer)")
                #expect(answer.headers.lowercased().contains("retry-after: 1\r\n"), "\(answer.headers)")
                let body = try String(contentsOfFile: dir.path + "/body", encoding: .utf8)
                #expect(body.contains("try again in 1 s"), "\(body)")
            }
            clock.advance(seconds: 1)
            #expect(try await login(AuthTests.token).code == "303")
        }
    }

    /// Guessing through the API counts the same: wrong bearer tokens from one address are
    /// answered 429 with Retry-After after four, the right one too until the wait is over. A
    /// session cookie does not count (its id is 256 random bits: nothing to guess, and an
    /// expired session's page sends many requests at once); a wrong one is cleared.
    @Test func wrongBearersCountAsWrongLoginsAndCookiesDoNot() async throws {
        let clock = Clock()
        try await withTokenServer(clock, .router) { client in
            let page: HTTPFields = [.referer: "http://localhost/"]
            for _ in 0..<12 {
                try await client.execute(uri: "/api/v1/cameras", method: .get, headers: page + [.cookie: "vigil_session=expired-session"]) { response in
                    #expect(response.status == .unauthorized)
                    #expect(response.headers[.setCookie]?.contains("Max-Age=0") == true, "a wrong cookie is cleared")
                }
            }
            for _ in 0..<4 {
                try await client.execute(uri: "/api/v1/cameras", method: .get, headers: [.authorization: "Bearer guess"]) { #expect($0.status == .unauthorized) }
            }
            for token in ["guess", AuthTests.token] {
                try await client.execute(uri: "/api/v1/cameras", method: .get, headers: [.authorization: "Bearer \(token)"]) { response in
                    #expect(response.status == .tooManyRequests)
                    #expect(response.headers[.retryAfter] == "1")
                    #expect(response.errorMessage?.contains("try again in 1 s") == true)
                }
            }
            clock.advance(seconds: 1)
            try await client.execute(uri: "/api/v1/cameras", method: .get, headers: [.authorization: "Bearer \(AuthTests.token)"]) { #expect($0.status == .ok) }
        }
    }

    /// A server that asks for `AuthTests.token`, its login throttle on `clock`, tested through `mode`.
    private func withTokenServer(_ clock: Clock, _ mode: TestingSetup, _ body: @escaping @Sendable (any TestClientProtocol) async throws -> Void) async throws {
        let recording = try await Recording.start(segments: 0)
        defer { recording.remove() }
        var server = recording.server(AuthTests.settings(listen: "0.0.0.0:0"))
        server.loginThrottle = LoginThrottle(now: { clock.now })
        try await recording.stopping { try await server.application().test(mode, body) }
    }
}
