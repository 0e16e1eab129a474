import CaptureTesting
import Foundation
import Hummingbird
import HummingbirdTesting
import Recorder
import Testing
@testable import WebServer

/// DNS rebinding: another site's page makes its own name resolve to 127.0.0.1 and reads Vigil as
/// its own origin. Without a token, only `Host` values naming loopback (or `[http]
/// allowed_hosts`) are served; everything else is 421. There used to be no check at all.
@Suite(.timeLimit(.minutes(2))) struct HostCheckTests {
    private func status(_ port: Int, host: String, _ dir: TemporaryDirectory) async throws -> String {
        try await curl(["-w", "%{http_code}", "--max-time", "5", "-H", "Host: \(host)", "http://127.0.0.1:\(port)/api/v1/cameras"], output: dir.path + "/body").written
    }

    @Test func withoutATokenOnlyLoopbackAndAllowedNamesAreServed() async throws {
        let recording = try await Recording.start(segments: 0)
        defer { recording.remove() }
        let dir = try TemporaryDirectory()
        defer { dir.remove() }
        var http = HTTPSettings()
        http.allowedHosts = ["vigil.local"]
        try await recording.stopping {
            try await recording.server(http).application().test(.live) { client in
                let port = client.port!
                for host in ["127.0.0.1:\(port)", "localhost:\(port)", "LocalHost", "127.1.2.3", "[::1]:\(port)", "vigil.local:\(port)", "VIGIL.LOCAL.", "localhost."] {
                    #expect(try await status(port, host: host, dir) == "200", "\(host)")
                }
                for host in ["evil.example:\(port)", "127.0.0.1.evil.example", "localhost.evil.example", "vigil.local.evil.example", "[::2]:\(port)", "0.0.0.0:\(port)", "127.0.0.1:\(port):80", "[::1"] {
                    #expect(try await status(port, host: host, dir) == "421", "\(host)")
                }
                let body = try String(contentsOfFile: dir.path + "/body", encoding: .utf8)
                #expect(body.contains("\"error\"") && body.contains("allowed_hosts"), "\(body)")
            }
        }
    }

    /// With a token the token is the defence (another site's page cannot send it): any name is
    /// served to whoever has it, as on a LAN address or behind a reverse proxy.
    @Test func withATokenAnyHostIsAskedForTheToken() async throws {
        let recording = try await Recording.start(segments: 0)
        defer { recording.remove() }
        let dir = try TemporaryDirectory()
        defer { dir.remove() }
        try await recording.stopping {
            try await recording.server(AuthTests.settings()).application().test(.live) { client in
                let code = try await status(client.port!, host: "vigil.example.org", dir)
                #expect(code == "401")
            }
        }
    }

    @Test func hostsAreReadFromHostValuesAndOrigins() {
        #expect(AllowedHosts.host(ofAuthority: "Example.COM:8080") == "example.com")
        #expect(AllowedHosts.host(ofAuthority: "[::1]:8080") == "::1")
        #expect(AllowedHosts.host(ofAuthority: "[::1]") == "::1")
        #expect(AllowedHosts.host(ofAuthority: "localhost.") == "localhost")
        for bad in ["", "a b", "[::1", "[::1]x", "host:port", "x:80:90", "::1", "évil.com", "a/b"] {
            #expect(AllowedHosts.host(ofAuthority: bad) == nil, "\(bad)")
        }
        #expect(HTTPSettings.isLoopback("127.0.0.1") && HTTPSettings.isLoopback("127.255.0.9") && HTTPSettings.isLoopback("::1"))
        #expect(!HTTPSettings.isLoopback("127.0.0.1.example.com") && !HTTPSettings.isLoopback("128.0.0.1") && !HTTPSettings.isLoopback("::2"))
    }
}
