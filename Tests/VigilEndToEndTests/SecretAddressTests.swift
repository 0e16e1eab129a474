import CaptureTesting
import Foundation
import Glibc
import Testing

/// A camera password holding any of / ? # @ : % never shows: not in `vigil devices --url`,
/// `vigil check-config`, `vigil run`'s log, hooks, the API, the index or `vigil recordings`.
/// Every password here ends in "cret", which no output may hold. / ? and # end the host part
/// of an address early, so an address holding them as they are cannot be read: it is refused
/// (masked) with a fix, never connected to; percent-encoded, or in `password_file`, it works.
@Suite(.serialized, .timeLimit(.minutes(3))) struct SecretAddressTests {
    static let separators = ["/", "?", "#", "@", ":", "%"]

    /// The password as a URL's user part must write it.
    private func percentEncoded(_ separator: String) -> String {
        ["/": "%2F", "?": "%3F", "#": "%23", "@": "%40", ":": "%3A", "%": "%25"][separator]!
    }

    private func configuration(root: String, url: String, passwordFile: String? = nil) -> String {
        """
        [storage]
        root = "\(root)"

        [http]
        listen = ""

        [cameras.porch]
        url = "\(url)"
        \(passwordFile.map { "password_file = \"\($0)\"" } ?? "")

        [[record]]
        camera = "porch"
        segment_seconds = 1
        """
    }

    @Test(arguments: separators) func devicesAndCheckConfigNeverShowAPasswordHolding(_ separator: String) throws {
        let password = "se\(separator)cret"
        let server = try LoopbackCameraServer.rtsp(user: "viewer", password: password)
        defer { server.stop() }
        let masked = "rtsp://***@127.0.0.1:\(server.port)/cam"
        let raw = "rtsp://viewer:\(password)@127.0.0.1:\(server.port)/cam"
        let encoded = "rtsp://viewer:se\(percentEncoded(separator))cret@127.0.0.1:\(server.port)/cam"
        let unreadable = "/?#".contains(separator)

        let probe = VigilBinary.run(["devices", "--url", raw])
        let probeText = probe.output + probe.errorOutput
        #expect(!probeText.contains("cret"), "\(probeText)")
        if unreadable {
            #expect(probe.status == 1 && probe.errorOutput.contains("vigil: \(masked) cannot be read"), "\(probeText)")
        } else {
            #expect(probe.status == 0 && probe.output.contains(masked) && probe.output.contains("video: h264"), "\(probeText)")
        }
        let encodedProbe = VigilBinary.run(["devices", "--url", encoded])
        #expect(encodedProbe.status == 0 && encodedProbe.output.contains("video: h264"), "\(encodedProbe.output)\(encodedProbe.errorOutput)")
        #expect(!(encodedProbe.output + encodedProbe.errorOutput).contains("cret"))

        let dir = try TemporaryDirectory()
        defer { dir.remove() }
        let file = dir.path + "/vigil.toml"
        try configuration(root: dir.path + "/data", url: raw).write(toFile: file, atomically: true, encoding: .utf8)
        let check = VigilBinary.run(["check-config", file])
        let checkText = check.output + check.errorOutput
        #expect(!checkText.contains("cret"), "\(checkText)")
        if unreadable {
            #expect(check.status == 1 && check.errorOutput.contains("vigil.toml:8: error: the url of camera porch, \(masked), cannot be read"), "\(checkText)")
        } else {
            #expect(check.status == 0 && check.output.contains("camera porch: \(masked)\n  video: h264"), "\(checkText)")
        }
        // In password_file, as it is: escaped into the address, which then connects.
        try "\(password)\n".write(toFile: dir.path + "/porch.pw", atomically: true, encoding: .utf8)
        try configuration(root: dir.path + "/data", url: "rtsp://viewer@127.0.0.1:\(server.port)/cam", passwordFile: dir.path + "/porch.pw")
            .write(toFile: file, atomically: true, encoding: .utf8)
        let fromFile = VigilBinary.run(["check-config", file])
        #expect(fromFile.status == 0 && fromFile.output.contains("video: h264"), "\(fromFile.output)\(fromFile.errorOutput)")
        #expect(!(fromFile.output + fromFile.errorOutput).contains("cret"))
    }

    /// `vigil run` with a camera whose password holds all six (percent-encoded: it records) and
    /// one whose wrong password holds them too (in its file: refused, so its address is in the
    /// loss, the hook and the log): nothing holds either password.
    @Test func runLogsHooksAPIAndIndexNeverShowThePassword() async throws {
        let server = try LoopbackCameraServer.rtsp(user: "viewer", password: "se/?#@:%cret")
        defer { server.stop() }
        let dir = try TemporaryDirectory()
        defer { dir.remove() }
        let root = dir.path + "/data", file = dir.path + "/vigil.toml"
        try "wr/?#@:%cret\n".write(toFile: dir.path + "/wrong.pw", atomically: true, encoding: .utf8)
        let http = try Listener()
        http.close()
        try """
            [storage]
            root = "\(root)"

            [http]
            listen = "127.0.0.1:\(http.port)"

            [hooks]
            camera_lost = "echo \\"$VIGIL_REASON\\" >> \(dir.path)/hooks.txt"
            session_started = "env | grep VIGIL_ >> \(dir.path)/hooks.txt"

            [cameras.porch]
            url = "rtsp://viewer:se%2F%3F%23%40%3A%25cret@127.0.0.1:\(server.port)/cam"

            [cameras.gate]
            url = "rtsp://viewer@127.0.0.1:\(server.port)/cam"
            password_file = "\(dir.path)/wrong.pw"

            [[record]]
            camera = "porch"
            segment_seconds = 1

            [[record]]
            camera = "gate"
            segment_seconds = 1
            """.write(toFile: file, atomically: true, encoding: .utf8)
        let process = try VigilBinary.start(["run", "--config", file, "--log-level", "debug"], in: dir.path)
        defer { if process.isRunning { process.terminate() } }
        func log() -> String { VigilBinary.output(in: dir.path) }
        #expect(await waitUntil(seconds: 30) {
            RecordingInspector.files(under: root + "/porch/video", endingWith: ".mp4").count >= 2 && log().contains("401")
        }, "\(log())")
        var answers = ""
        for path in ["/api/v1/cameras", "/api/v1/cameras/porch/events", "/api/v1/cameras/gate/events", "/api/v1/cameras/porch/recordings", "/metrics"] {
            answers += httpGet(port: http.port, path) ?? ""
        }
        #expect(answers.contains(#""name":"gate""#), "\(answers)")
        kill(process.processIdentifier, SIGTERM)
        #expect(await waitForExit(process, seconds: 30))
        #expect(process.terminationStatus == 0)
        let hooks = (try? String(contentsOfFile: dir.path + "/hooks.txt", encoding: .utf8)) ?? ""
        #expect(hooks.contains("401") && hooks.contains("rtsp://***@127.0.0.1:\(server.port)/cam"), "\(hooks)")
        let listings = ["recordings", "events"].map { VigilBinary.run([$0, "--data", root, "--json"]) }
        for (name, text) in [("log", log()), ("hooks", hooks), ("API", answers)] + listings.map({ ("listing", $0.output + $0.errorOutput) }) {
            #expect(!text.contains("cret"), "the \(name) holds a password: \(text)")
        }
        for name in ["vigil-index.sqlite3", "vigil-index.sqlite3-wal"] {
            guard let index = FileManager.default.contents(atPath: root + "/" + name) else { continue }
            #expect(index.range(of: Data("cret".utf8)) == nil, "\(name) holds a password")
        }
    }

    /// The web server's token is a secret too: swift-service-lifecycle's debug log prints the
    /// services whole, the web server's settings with them.
    @Test func theWebServerTokenNeverShowsInTheDebugLog() throws {
        let dir = try TemporaryDirectory()
        defer { dir.remove() }
        try "tok-cret-0123456789\n".write(toFile: dir.path + "/token", atomically: true, encoding: .utf8)
        // Only its owner may read a token file (one others can read is refused at start).
        try FileManager.default.setAttributes([.posixPermissions: 0o600], ofItemAtPath: dir.path + "/token")
        let http = try Listener()
        http.close()
        let file = dir.path + "/vigil.toml"
        try """
            [storage]
            root = "\(dir.path)/data"

            [http]
            listen = "127.0.0.1:\(http.port)"
            token_file = "\(dir.path)/token"

            \(syntheticCamera("a", device: 0))
            """.write(toFile: file, atomically: true, encoding: .utf8)
        let run = VigilBinary.run(["run", "--config", file, "--duration", "2", "--log-level", "trace"])
        #expect(run.status == 0, "\(run.errorOutput)")
        #expect(run.errorOutput.contains("Starting service lifecycle"), "the debug log no longer prints the services: \(run.errorOutput)")
        #expect(!(run.output + run.errorOutput).contains("cret"), "\(run.errorOutput)")
    }
}
