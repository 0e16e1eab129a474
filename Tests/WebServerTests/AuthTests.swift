import CaptureTesting
import Foundation
import Hummingbird
import HummingbirdTesting
import Recorder
import Testing
@testable import WebServer

@Suite(.timeLimit(.minutes(2))) struct AuthTests {
    static let token = "s3cret-token-0123456789abcdef"

    /// A server that needs `token` (read from no file: the settings hold it).
    static func settings(listen: String = HTTPSettings.defaultListen) -> HTTPSettings {
        var http = HTTPSettings()
        http.listen = listen
        http.tokenFile = "/unused"
        http.token = token
        return http
    }

    /// Logs in through the form with `body` (the token by default) and returns the session
    /// cookie ("vigil_session=ID") the server set.
    static func login(_ client: any TestClientProtocol, body: String? = nil) async throws -> String {
        let escaped = token.addingPercentEncoding(withAllowedCharacters: .alphanumerics)!
        return try await client.execute(
            uri: "/login", method: .post, headers: [.contentType: "application/x-www-form-urlencoded", .origin: "http://localhost"],
            body: ByteBuffer(string: body ?? "token=\(escaped)")
        ) { response in
            #expect(response.status == .seeOther)
            return try #require(response.headers[.setCookie]?.split(separator: ";").first.map(String.init))
        }
    }

    private func withTokenServer(_ body: @escaping @Sendable (any TestClientProtocol) async throws -> Void) async throws {
        let recording = try await Recording.start(segments: 0)
        defer { recording.remove() }
        try await recording.stopping { try await recording.server(Self.settings(listen: "0.0.0.0:0")).application().test(.router, body) }
    }

    @Test func withATokenEveryRequestNeedsItAsBearerOrCookie() async throws {
        try await withTokenServer { client in
            try await client.execute(uri: "/api/v1/cameras", method: .get) { response in
                #expect(response.status == .unauthorized)
                #expect(response.headers[.contentType]?.hasPrefix("application/json") == true)
                #expect(response.errorMessage?.contains("token") == true)
            }
            try await client.execute(uri: "/api/v1/cameras", method: .get, headers: [.authorization: "Bearer wrong-token-0123456789abcdef"]) { response in
                #expect(response.status == .unauthorized)
            }
            // A token that is a prefix of the right one is still wrong.
            try await client.execute(uri: "/api/v1/cameras", method: .get, headers: [.authorization: "Bearer s3cret"]) { response in
                #expect(response.status == .unauthorized)
            }
            try await client.execute(uri: "/api/v1/cameras", method: .get, headers: [.authorization: "Bearer \(Self.token)"]) { response in
                #expect(response.status == .ok)
                #expect((response.json()["cameras"] as? [Any])?.count == 1)
            }
            // The scheme's name is case-insensitive (RFC 9110): curl and some libraries send "bearer".
            for scheme in ["bearer", "BEARER", "bEaReR"] {
                try await client.execute(uri: "/api/v1/cameras", method: .get, headers: [.authorization: "\(scheme) \(Self.token)"]) { response in
                    #expect(response.status == .ok, "\(scheme)")
                }
            }
            try await client.execute(uri: "/api/v1/cameras", method: .get, headers: [.authorization: "Basic \(Self.token)"]) { response in
                #expect(response.status == .unauthorized)
            }
            // Unknown routes say 401 too: nothing about what exists is told without the token.
            try await client.execute(uri: "/api/v1/nothing", method: .get) { response in
                #expect(response.status == .unauthorized)
            }
            try await client.execute(uri: "/healthz", method: .get) { response in
                #expect(response.status == .ok)
            }
        }
    }

    @Test func aBrowserGetsTheLoginFormAndTheCookieFromLoginOpensTheAPI() async throws {
        try await withTokenServer { client in
            try await client.execute(uri: "/", method: .get) { response in
                #expect(response.status == .unauthorized)
                #expect(response.headers[.contentType]?.hasPrefix("text/html") == true)
                #expect(String(buffer: response.body).contains("action=\"/login\""))
            }
            let form: HTTPFields = [.contentType: "application/x-www-form-urlencoded"]
            try await client.execute(uri: "/login", method: .post, headers: form, body: ByteBuffer(string: "token=wrong")) { response in
                #expect(response.status == .unauthorized)
                #expect(response.headers[.setCookie] == nil)
            }
            let escaped = Self.token.addingPercentEncoding(withAllowedCharacters: .alphanumerics)!
            let cookie = try await client.execute(uri: "/login", method: .post, headers: form, body: ByteBuffer(string: "token=\(escaped)")) { response in
                #expect(response.status == .seeOther)
                #expect(response.headers[.location] == "/")
                let setCookie = try #require(response.headers[.setCookie])
                #expect(setCookie.contains("HttpOnly") && setCookie.contains("SameSite=Strict") && setCookie.contains("Path=/"))
                return try #require(setCookie.split(separator: ";").first.map(String.init))
            }
            #expect(cookie.hasPrefix("vigil_session="))
            // The page's requests carry its Referer (Referrer-Policy: same-origin).
            let page = "http://localhost/"
            try await client.execute(uri: "/api/v1/cameras", method: .get, headers: [.cookie: cookie, .referer: page]) { response in
                #expect(response.status == .ok)
            }
            try await client.execute(uri: "/api/v1/cameras", method: .get, headers: [.cookie: "vigil_session=guess", .referer: page]) { response in
                #expect(response.status == .unauthorized)
            }
            // The cookie with no sign of where the request comes from (no Sec-Fetch-Site,
            // Origin or Referer): another page on this host could be using it.
            try await client.execute(uri: "/api/v1/cameras", method: .get, headers: [.cookie: cookie]) { response in
                #expect(response.status == .forbidden)
                #expect(response.errorMessage?.contains("session cookie") == true)
            }
        }
    }

    /// A WebSocket upgrade without the token is refused like any request: 401 and the JSON error
    /// (SwiftNIO's upgrader alone answers a bare 400).
    @Test func aWebSocketWithoutTheTokenIs401JSON() async throws {
        let recording = try await Recording.start(segments: 0)
        defer { recording.remove() }
        let dir = try TemporaryDirectory()
        defer { dir.remove() }
        try await recording.stopping {
            try await recording.server(Self.settings()).application().test(.live) { client in
                let url = "http://127.0.0.1:\(client.port!)/api/v1/cameras/\(Recording.camera)/live"
                let upgrade = ["-H", "Connection: Upgrade", "-H", "Upgrade: websocket", "-H", "Sec-WebSocket-Version: 13",
                               "-H", "Sec-WebSocket-Key: dGhlIHNhbXBsZSBub25jZQ==", "--max-time", "3", "-w", "%{http_code}"]
                let refused = try await curl(upgrade + [url], output: "\(dir.path)/refused")
                #expect(refused.written == "401")
                let body = try String(contentsOfFile: "\(dir.path)/refused", encoding: .utf8)
                #expect(body.contains("\"error\"") && body.contains("token"), "\(body)")
                let allowed = try await curl(upgrade + ["-H", "Authorization: Bearer \(Self.token)", url], output: "\(dir.path)/allowed")
                #expect(allowed.written == "101")
            }
        }
    }
}
