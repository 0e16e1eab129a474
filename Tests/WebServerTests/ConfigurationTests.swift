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
        try "0123456789abcdefXYZ\n".write(toFile: path, atomically: true, encoding: .utf8)
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
        try "\n".write(toFile: dir.path + "/empty", atomically: true, encoding: .utf8)
        try "short\n".write(toFile: dir.path + "/short", atomically: true, encoding: .utf8)
        for (file, says) in [("empty", "is empty"), ("missing", "No such file"), ("short", "too short")] {
            let message = errors("[http]\ntoken_file = \"\(dir.path)/\(file)\"")
            #expect(message.contains("vigil.toml:2") && message.contains(says), "\(message)")
            #expect(message.contains("head -c 32 /dev/urandom"), "\(message)")
        }
    }

    @Test func aListenThatIsNotHostColonPortOrAnUnknownKeyIsAnError() {
        #expect(errors("[http]\nlisten = \"8080\"").contains("is not HOST:PORT"))
        #expect(errors("[http]\nlisten = \"localhost:99999\"").contains("is not HOST:PORT"))
        #expect(errors("[http]\nmax_live = 3").contains("max_live"))
        #expect(errors("[http]\nmax_live_clients = -1").contains("out of range"))
    }
}
