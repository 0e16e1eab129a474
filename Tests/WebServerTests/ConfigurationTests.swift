import CaptureTesting
import Foundation
import Recorder
import Testing

/// The `[http]` section: safe defaults, and refusing a server others can reach without a token.
@Suite struct HTTPConfigurationTests {
    /// `text` (its lines keep their numbers) and one camera after it: a file must name one.
    private func parse(_ text: String) throws -> Configuration {
        try ConfigurationLoader.parse(text: text + "\n[cameras.a]\ndevice = \"synthetic-0\"\n", path: "vigil.toml")
    }

    private func errors(_ text: String) -> String {
        do {
            _ = try parse(text)
            return ""
        } catch {
            return "\(error)"
        }
    }

    /// A token file as the README says to make one: readable by its owner only.
    private func writeToken(_ text: String, to path: String, mode: mode_t = 0o600) throws {
        try text.write(toFile: path, atomically: true, encoding: .utf8)
        chmod(path, mode)
    }

    @Test func theDefaultIsLoopbackPort8080With16LiveClients() throws {
        let c = try parse("")
        #expect(c.http.listen == "127.0.0.1:8080" && c.http.isEnabled)
        #expect(c.http.tokenFile == nil && c.http.token == nil)
        #expect(c.http.maxLiveClients == 16)
        #expect(Configuration.builtInDefault().http.listen == "127.0.0.1:8080")
        #expect(try parse("[http]\nlisten = \"\"").http.isEnabled == false)
    }

    @Test(arguments: ["0.0.0.0:8080", "192.168.1.5:80", "[::]:8080"])
    func anAddressOthersCanReachNeedsAToken(listen: String) {
        let message = errors("[http]\nlisten = \"\(listen)\"")
        #expect(message.contains("vigil.toml:2"), "\(message)")
        #expect(message.contains("token_file"), "\(message)")
        #expect(message.contains("head -c 32 /dev/urandom | base64 > /etc/vigil/token"), "\(message)")
    }

    @Test func aReadableTokenFileOpensAnyAddress() throws {
        let dir = try TemporaryDirectory("vigil-token")
        defer { dir.remove() }
        let path = dir.path + "/token"
        try writeToken("0123456789abcdefXYZ\n", to: path)
        let c = try parse("[http]\nlisten = \"0.0.0.0:8443\"\ntoken_file = \"\(path)\"\nmax_live_clients = 4")
        #expect(c.http.token == "0123456789abcdefXYZ")
        #expect(c.http.address?.host == "0.0.0.0" && c.http.address?.port == 8443)
        #expect(c.http.maxLiveClients == 4)
        #expect(!c.summary(present: []).contains("0123456789abcdef"), "the token is never shown")
        #expect(c.summary(present: []).contains("http: http://0.0.0.0:8443, token from \(path)"))
    }

    @Test func anEmptyMissingOrShortTokenFileIsAnErrorAtItsLine() throws {
        let dir = try TemporaryDirectory("vigil-token")
        defer { dir.remove() }
        try writeToken("\n", to: dir.path + "/empty")
        try writeToken("short\n", to: dir.path + "/short")
        for (file, says) in [("empty", "is empty"), ("missing", "No such file"), ("short", "too short")] {
            let message = errors("[http]\ntoken_file = \"\(dir.path)/\(file)\"")
            #expect(message.contains("vigil.toml:2") && message.contains(says), "\(message)")
            #expect(message.contains("head -c 32 /dev/urandom"), "\(message)")
        }
    }

    /// Like OpenSSH with a private key: a token others on the machine can read (or change) is
    /// refused, not used with a warning. Its group may read it (root:vigil, 0640).
    @Test func aTokenFileOthersCanReadIsRefused() throws {
        let dir = try TemporaryDirectory("vigil-token")
        defer { dir.remove() }
        let path = dir.path + "/token"
        for mode: mode_t in [0o644, 0o604, 0o602, 0o620] {
            try writeToken("0123456789abcdefXYZ\n", to: path, mode: mode)
            let message = errors("[http]\ntoken_file = \"\(path)\"")
            #expect(message.contains("vigil.toml:2") && message.contains("can be read or changed by other users"), "\(String(mode, radix: 8)): \(message)")
            #expect(message.contains("chmod 600 \(path)"), "\(message)")
        }
        try writeToken("0123456789abcdefXYZ\n", to: path, mode: 0o640)
        #expect(try parse("[http]\ntoken_file = \"\(path)\"").http.token == "0123456789abcdefXYZ")
    }

    @Test func limitsAndAllowedHostsAreReadAndChecked() throws {
        let c = try parse("""
            [http]
            max_clips = 1
            max_connections = 100
            max_connections_per_client = 8
            idle_timeout_seconds = 5
            header_timeout_seconds = 2
            allowed_hosts = ["Vigil.Local", "192.168.1.5", "[fe80::1]"]
            """)
        #expect(c.http.maxClips == 1 && c.http.maxConnections == 100 && c.http.maxConnectionsPerClient == 8)
        #expect(c.http.idleTimeoutSeconds == 5 && c.http.headerTimeoutSeconds == 2)
        #expect(c.http.allowedHosts == ["vigil.local", "192.168.1.5", "fe80::1"])
        let d = try parse("")
        #expect(d.http.maxClips == 2 && d.http.maxConnections == 512 && d.http.maxConnectionsPerClient == 64)
        #expect(d.http.idleTimeoutSeconds == 30 && d.http.headerTimeoutSeconds == 10 && d.http.allowedHosts.isEmpty)
        for (text, says) in [("max_clips = 65", "out of range"), ("max_connections = 3", "out of range"), ("idle_timeout_seconds = 0", "out of range"),
                             ("header_timeout_seconds = \"10\"", "whole number"), ("allowed_hosts = \"vigil.local\"", "list of host names"),
                             ("allowed_hosts = [\"vigil.local:8080\"]", "is not a host name"), ("allowed_hosts = [\"http://vigil.local\"]", "is not a host name"),
                             ("allowed_hosts = [3]", "host names in quotes")] {
            let message = errors("[http]\n\(text)")
            #expect(message.contains("vigil.toml:2") && message.contains(says), "\(text): \(message)")
        }
    }

    /// The session and trail limits, and a proxy without a token: behind a reverse proxy a
    /// loopback listener serves other machines, and asks nothing once no user is left.
    @Test func sessionLimitsAndProxiesAreReadAndAProxyNeedsAToken() throws {
        let c = try parse("[http]\nsession_idle_hours = 2\nsession_days = 7\naudit_days = 90\n")
        #expect(c.http.sessionIdleHours == 2 && c.http.sessionDays == 7 && c.http.auditDays == 90 && c.http.trustedProxies.isEmpty)
        let d = try parse("")
        #expect(d.http.sessionIdleHours == 24 && d.http.sessionDays == 30 && d.http.auditDays == 365)
        let proxied = errors("[http]\ntrusted_proxies = [\"127.0.0.1\"]")
        #expect(proxied.contains("trusted_proxies is set but token_file is not") && proxied.contains("token_file = "), "\(proxied)")
        #expect(errors("[http]\nsession_days = 0").contains("out of range"))
    }

    @Test func aListenThatIsNotHostColonPortOrAnUnknownKeyIsAnError() {
        #expect(errors("[http]\nlisten = \"8080\"").contains("is not HOST:PORT"))
        #expect(errors("[http]\nlisten = \"localhost:99999\"").contains("is not HOST:PORT"))
        #expect(errors("[http]\nmax_live = 3").contains("max_live"))
        #expect(errors("[http]\nmax_live_clients = -1").contains("out of range"))
    }
}
