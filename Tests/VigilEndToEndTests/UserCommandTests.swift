import CaptureTesting
import Foundation
import Testing

/// `vigil user`, `token`, `session` and `audit` against a running `vigil run`, as an
/// administrator would use them: each change reaches the running server without a restart.
@Suite(.timeLimit(.minutes(3))) struct UserCommandTests {
    private func vigil(_ arguments: [String], _ served: ServedRecorder) -> (status: Int32, output: String, errorOutput: String) {
        VigilBinary.run(arguments + ["--config", served.dir.path + "/vigil.toml"])
    }

    /// The status of `GET /api/v1/cameras` with `headers`, and the headers of the answer.
    private func get(_ served: ServedRecorder, _ headers: [String]) -> String {
        RecordingInspector.run("/usr/bin/curl", ["-s", "-o", "/dev/null", "-w", "%{http_code}", "--max-time", "5",
                                                 "-H", "Referer: http://127.0.0.1:\(served.port)/"] + headers.flatMap { ["-H", $0] }
                                                 + ["http://127.0.0.1:\(served.port)/api/v1/cameras"]).output
    }

    @Test func usersTokensSessionsAndTheTrailFromTheCommandLine() async throws {
        let served = try await ServedRecorder.start()
        defer { served.remove() }
        #expect(get(served, []) == "200", "loopback without users asks for nothing")
        let passwordFile = served.dir.path + "/password"
        try "a long password\n".write(toFile: passwordFile, atomically: true, encoding: .utf8)
        let added = vigil(["user", "add", "ana", "--role", "admin", "--password-file", passwordFile], served)
        #expect(added.status == 0 && added.output.contains("Added admin ana"), "\(added)")
        #expect(!vigil(["user", "list"], served).output.contains("a long password"))
        #expect(await waitUntil(seconds: 10) { get(served, []) == "401" }, "once a user exists, even loopback logs in")

        let login = RecordingInspector.run("/usr/bin/curl", [
            "-s", "-o", "/dev/null", "-D", "-", "--max-time", "10", "-H", "Origin: http://127.0.0.1:\(served.port)",
            "-A", "UserCommandTests", "-d", "user=ana&password=a+long+password", "http://127.0.0.1:\(served.port)/login"]).output
        let cookie = try #require(login.split(separator: "\r\n").first { $0.hasPrefix("Set-Cookie: ") }?.dropFirst(12).split(separator: ";").first)
        #expect(get(served, ["Cookie: \(cookie)"]) == "200")
        let sessions = vigil(["session", "list"], served).output
        #expect(sessions.contains(" ana  from 127.0.0.1") && sessions.contains("UserCommandTests"), "\(sessions)")
        let sessionID = try #require(sessions.split(separator: " ").first.map(String.init))

        let token = vigil(["token", "add", "script", "--user", "ana"], served).output.trimmingCharacters(in: .whitespacesAndNewlines)
        #expect(token.count == 43)
        #expect(await waitUntil(seconds: 10) { get(served, ["Authorization: Bearer \(token)"]) == "200" })
        #expect(vigil(["token", "list"], served).output.contains("script  user ana"))
        #expect(vigil(["token", "revoke", "script"], served).status == 0)
        #expect(await waitUntil(seconds: 10) { get(served, ["Authorization: Bearer \(token)"]) == "401" }, "a revoked token is refused")

        #expect(vigil(["session", "revoke", sessionID], served).status == 0)
        #expect(await waitUntil(seconds: 10) { get(served, ["Cookie: \(cookie)"]) == "401" }, "a revoked session is refused")

        let trail = vigil(["audit", "--json"], served)
        let entries = trail.output.split(separator: "\n").compactMap { try? JSONSerialization.jsonObject(with: Data($0.utf8)) as? [String: String] }
        #expect(entries.contains { $0["user"] == "ana" && $0["action"] == "login" && $0["address"] == "127.0.0.1" }, "\(trail)")

        let removed = vigil(["user", "remove", "ana"], served)
        #expect(removed.status == 0 && vigil(["user", "list"], served).output.contains("No users"), "\(removed)")
        let missing = vigil(["user", "remove", "ana"], served)
        #expect(missing.status != 0 && missing.errorOutput.contains("there is no user ana"), "\(missing)")
        #expect(await waitUntil(seconds: 10) { get(served, []) == "200" }, "with the last user gone, loopback asks for nothing again")
        #expect(await served.stop() == 0, "\(served.errors())")
    }

    /// Without --password-file the password is asked twice on the terminal (here a pseudo-terminal
    /// made by `script`); two that differ change nothing; with no terminal at all, it says what to pass.
    @Test func thePasswordIsAskedTwiceOnTheTerminal() throws {
        let dir = try TemporaryDirectory()
        defer { dir.remove() }
        func typed(_ lines: String, _ name: String) -> (status: Int32, output: String, errorOutput: String) {
            RecordingInspector.run("/bin/sh", ["-c", "printf '\(lines)' | script -qec '\(VigilBinary.path) user add \(name) --role viewer --data \(dir.path)' /dev/null"])
        }
        let same = typed("a typed password\\na typed password\\n", "typed")
        #expect(same.status == 0 && same.output.contains("Password:") && same.output.contains("Again:") && same.output.contains("Added viewer typed"), "\(same)")
        let differ = typed("a typed password\\nanother password\\n", "other")
        #expect(differ.status != 0 && differ.output.contains("the two passwords differ"), "\(differ)")
        let list = VigilBinary.run(["user", "list", "--data", dir.path]).output
        #expect(list.contains("typed  viewer") && !list.contains("other"), "\(list)")
        let noTerminal = RecordingInspector.run("/bin/sh", ["-c", "\(VigilBinary.path) user add piped --role viewer --data \(dir.path) < /dev/null"])
        #expect(noTerminal.status != 0 && noTerminal.errorOutput.contains("pass --password-file FILE"), "\(noTerminal)")
    }
}
