import CaptureTesting
import Foundation
import Hummingbird
import HummingbirdTesting
import Recorder
import Testing
@testable import WebServer

@Suite(.timeLimit(.minutes(2))) struct AuthTests {
    static let token = "s3cret-token-0123456789abcdef"

    private func withTokenServer(_ body: @escaping @Sendable (any TestClientProtocol) async throws -> Void) async throws {
        let recording = try await Recording.start(segments: 0)
        defer { recording.remove() }
        var http = HTTPSettings()
        http.listen = "0.0.0.0:0"
        http.tokenFile = "/unused"
        http.token = Self.token
        try await recording.stopping { try await recording.server(http).application().test(.router, body) }
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
            try await client.execute(uri: "/api/v1/cameras", method: .get, headers: [.cookie: cookie]) { response in
                #expect(response.status == .ok)
            }
            try await client.execute(uri: "/api/v1/cameras", method: .get, headers: [.cookie: "vigil_session=guess"]) { response in
                #expect(response.status == .unauthorized)
            }
        }
    }

    @Test func comparisonNeedsEveryByteAndTheLength() {
        #expect(AuthMiddleware<WebRequestContext>.equal("abc", "abc"))
        #expect(!AuthMiddleware<WebRequestContext>.equal("abc", "abd"))
        #expect(!AuthMiddleware<WebRequestContext>.equal("abc", "abcd"))
        #expect(!AuthMiddleware<WebRequestContext>.equal("", "a"))
    }
}
