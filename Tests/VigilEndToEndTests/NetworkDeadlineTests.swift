import CaptureTesting
import Foundation
import Glibc
import Synchronization
import Testing

/// A test server that could not start.
struct TestServerError: Error, CustomStringConvertible {
    let message: String
    var description: String { message }
}

/// A DNS server on loopback that reads every query and answers none: a resolver that does not
/// answer, as `getaddrinfo` meets it. resolv.conf names no port, so it listens on port 53 of
/// an address of its own in 127.0.0.0/8 (root only).
final class SilentNameServer: Sendable {
    let address: String
    private let fd: Int32
    private let names = Mutex<Set<String>>([])

    init() throws {
        let fd = socket(AF_INET, Int32(SOCK_DGRAM.rawValue), 0)
        var chosen: String?
        for _ in 0..<20 {
            let candidate = "127.53.\(Int.random(in: 1...254)).\(Int.random(in: 1...254))"
            var a = sockaddr_in()
            a.sin_family = sa_family_t(AF_INET)
            a.sin_addr.s_addr = inet_addr(candidate)
            a.sin_port = UInt16(53).bigEndian
            let bound = withUnsafePointer(to: &a) {
                $0.withMemoryRebound(to: sockaddr.self, capacity: 1) { bind(fd, $0, socklen_t(MemoryLayout<sockaddr_in>.size)) == 0 }
            }
            if bound { chosen = candidate; break }
        }
        guard let chosen else {
            close(fd)
            throw TestServerError(message: "no loopback address to listen on port 53: \(String(cString: strerror(errno)))")
        }
        self.fd = fd
        address = chosen
        Thread.detachNewThread { [self] in readQueries() }
    }

    /// Whether a query for `name` arrived.
    func wasAsked(_ name: String) -> Bool { names.withLock { $0.contains(name) } }

    func stop() { shutdown(fd, Int32(SHUT_RDWR)) }

    deinit { close(fd) }

    private func readQueries() {
        var packet = [UInt8](repeating: 0, count: 1500)
        while true {
            let n = recv(fd, &packet, packet.count, 0)
            guard n > 0 else { return }
            // The question's name: length-prefixed labels from byte 12 up to a zero length.
            var labels: [String] = []
            var i = 12
            while i < n, packet[i] != 0, i + 1 + Int(packet[i]) <= n {
                labels.append(String(decoding: packet[(i + 1)..<(i + 1 + Int(packet[i]))], as: UTF8.self))
                i += 1 + Int(packet[i])
            }
            let name = labels.joined(separator: ".")
            names.withLock { _ = $0.insert(name) }
        }
    }
}

/// `vigil ARGUMENTS` in a mount namespace of its own, whose /etc/resolv.conf names `nameServer`
/// with `timeout:30 attempts:3` (the machine's own file is left alone). Output to files in `dir`.
private func startVigil(resolvingWith nameServer: SilentNameServer, _ arguments: [String], in dir: String) throws -> Process {
    let resolvConf = dir + "/resolv.conf"
    try "nameserver \(nameServer.address)\noptions timeout:30 attempts:3\n".write(toFile: resolvConf, atomically: true, encoding: .utf8)
    let mounted = ["/usr/bin/unshare", "--mount", "/bin/sh", "-c", "mount --bind \"$0\" /etc/resolv.conf && exec \"$@\"", resolvConf]
    return try VigilBinary.start(arguments, in: dir, under: mounted)
}

/// Network cameras named by a host whose resolver never answers: `getaddrinfo` would hold the
/// thread that calls it for 90 s (`timeout:30 attempts:3`). Stops, `vigil devices --url` and
/// `vigil check-config` must not wait for it. The bound of 20 s only tells "at once" from
/// "when the resolver gives up"; `Scripts/bench-shutdown` measures.
@Suite(.serialized, .enabled(if: getuid() == 0, "needs root for port 53 and a mount namespace with its own resolv.conf"), .timeLimit(.minutes(3)))
struct UnansweredNameTests {
    /// One camera for each way in: Vigil's RTSP client, libavformat's RTSP (UDP) and HTTP.
    private let cameras = [
        ("tcp", "rtsp://cam-tcp.vigil-test.invalid/cam", "tcp"),
        ("udp", "rtsp://cam-udp.vigil-test.invalid/cam", "udp"),
        ("http", "http://cam-http.vigil-test.invalid/video.mjpg", "tcp"),
    ]

    private func configuration(root: String) -> String {
        var text = """
            [storage]
            root = "\(root)"

            [http]
            listen = ""

            """
        for (name, url, transport) in cameras {
            text += """

                [cameras.\(name)]
                url = "\(url)"
                transport = "\(transport)"

                [[record]]
                camera = "\(name)"
                segment_seconds = 1

                """
        }
        return text
    }

    /// A name server that does not answer, a folder, and the configuration in it.
    private func setUp() throws -> (SilentNameServer, TemporaryDirectory, String) {
        let nameServer = try SilentNameServer()
        let dir = try TemporaryDirectory()
        let file = dir.path + "/vigil.toml"
        try configuration(root: dir.path + "/data").write(toFile: file, atomically: true, encoding: .utf8)
        return (nameServer, dir, file)
    }

    @Test func aStopDoesNotWaitForTheResolver() async throws {
        let (nameServer, dir, file) = try setUp()
        defer { nameServer.stop(); dir.remove() }
        let process = try startVigil(resolvingWith: nameServer, ["run", "--config", file], in: dir.path)
        defer { if process.isRunning { kill(process.processIdentifier, SIGKILL) } }
        // Every camera's connection is waiting for its name.
        #expect(await waitUntil(seconds: 30) {
            ["cam-tcp", "cam-udp", "cam-http"].allSatisfy { nameServer.wasAsked("\($0).vigil-test.invalid") }
        }, "\(VigilBinary.output(in: dir.path))")
        kill(process.processIdentifier, SIGTERM)
        #expect(await waitForExit(process, seconds: 20), "SIGTERM waited for the resolver: \(VigilBinary.output(in: dir.path))")
        #expect(!process.isRunning && process.terminationStatus == 0, "\(VigilBinary.output(in: dir.path))")
    }

    @Test func devicesURLGivesUpAtItsTimeout() async throws {
        let (nameServer, dir, _) = try setUp()
        defer { nameServer.stop(); dir.remove() }
        let process = try startVigil(resolvingWith: nameServer, ["devices", "--url", "rtsp://cam.vigil-test.invalid/cam", "--timeout", "2"], in: dir.path)
        defer { if process.isRunning { kill(process.processIdentifier, SIGKILL) } }
        #expect(await waitForExit(process, seconds: 20), "it waited for the resolver")
        #expect(!process.isRunning && process.terminationStatus == 1)
        #expect(VigilBinary.output(in: dir.path).contains("rtsp://cam.vigil-test.invalid/cam: timed out"), "\(VigilBinary.output(in: dir.path))")
        #expect(nameServer.wasAsked("cam.vigil-test.invalid"))
    }

    @Test func checkConfigProbesAllCamerasWithinItsTimeout() async throws {
        let (nameServer, dir, file) = try setUp()
        defer { nameServer.stop(); dir.remove() }
        let process = try startVigil(resolvingWith: nameServer, ["check-config", "--timeout", "2", file], in: dir.path)
        defer { if process.isRunning { kill(process.processIdentifier, SIGKILL) } }
        #expect(await waitForExit(process, seconds: 20), "it waited for the resolver")
        #expect(!process.isRunning && process.terminationStatus == 0, "\(VigilBinary.output(in: dir.path))")
        for (name, url, _) in cameras {
            #expect(VigilBinary.output(in: dir.path).contains("camera \(name): note: cannot reach \(url): timed out now"), "\(VigilBinary.output(in: dir.path))")
        }
    }
}

/// A TCP relay on loopback to a server's `port` that holds each chunk the server sends for
/// `delayNanos` before passing it on: a camera that answers every request, slowly.
final class SlowRelay: Sendable {
    let port: Int
    private let listener: Int32

    init(to upstream: Int, delayNanos: Int64) throws {
        let listener = socket(AF_INET, Int32(SOCK_STREAM.rawValue), 0)
        self.listener = listener
        var a = Self.loopback(port: 0)
        var length = socklen_t(MemoryLayout<sockaddr_in>.size)
        let bound = withUnsafeMutablePointer(to: &a) {
            $0.withMemoryRebound(to: sockaddr.self, capacity: 1) {
                bind(listener, $0, length) == 0 && listen(listener, 8) == 0 && getsockname(listener, $0, &length) == 0
            }
        }
        guard bound else { throw TestServerError(message: "relay: \(String(cString: strerror(errno)))") }
        port = Int(UInt16(bigEndian: a.sin_port))
        Thread.detachNewThread { [listener] in
            while true {
                let client = accept(listener, nil, nil)
                guard client >= 0 else { return }
                let server = socket(AF_INET, Int32(SOCK_STREAM.rawValue), 0)
                var target = Self.loopback(port: upstream)
                let connected = withUnsafePointer(to: &target) {
                    $0.withMemoryRebound(to: sockaddr.self, capacity: 1) { connect(server, $0, socklen_t(MemoryLayout<sockaddr_in>.size)) == 0 }
                }
                guard connected else { close(client); close(server); continue }
                Thread.detachNewThread { Self.pump(from: client, to: server, delayNanos: 0) }
                Thread.detachNewThread { Self.pump(from: server, to: client, delayNanos: delayNanos) }
            }
        }
    }

    func stop() { shutdown(listener, Int32(SHUT_RDWR)) }

    deinit { close(listener) }

    private static func loopback(port: Int) -> sockaddr_in {
        var a = sockaddr_in()
        a.sin_family = sa_family_t(AF_INET)
        a.sin_addr.s_addr = inet_addr("127.0.0.1")
        a.sin_port = UInt16(port).bigEndian
        return a
    }

    /// Copies until either side closes, then closes both ways.
    private static func pump(from source: Int32, to destination: Int32, delayNanos: Int64) {
        var chunk = [UInt8](repeating: 0, count: 65536)
        while true {
            let n = recv(source, &chunk, chunk.count, 0)
            guard n > 0 else { break }
            if delayNanos > 0 { usleep(useconds_t(delayNanos / 1000)) }
            guard send(destination, chunk, n, Int32(MSG_NOSIGNAL)) == n else { break }
        }
        shutdown(source, Int32(SHUT_RDWR))
        shutdown(destination, Int32(SHUT_RDWR))
    }
}

/// One deadline over a whole probe: a camera that answers each request within the timeout,
/// but all of them together not, is given up at the timeout (a deadline per step let a slow
/// camera keep `vigil devices --url` for 37 s).
@Suite(.serialized, .timeLimit(.minutes(2))) struct ProbeDeadlineTests {
    @Test func aSlowCameraIsGivenUpAtTheTimeoutInAll() async throws {
        let server = try LoopbackCameraServer.rtsp()
        defer { server.stop() }
        // Each answer 1.5 s late: OPTIONS, DESCRIBE, SETUP and PLAY take 6 s together.
        let relay = try SlowRelay(to: server.port, delayNanos: 1_500_000_000)
        defer { relay.stop() }
        let url = "rtsp://127.0.0.1:\(relay.port)/cam"
        let short = VigilBinary.run(["devices", "--url", url, "--timeout", "3"])
        #expect(short.status == 1 && short.errorOutput.contains("\(url): timed out"), "\(short.output)\(short.errorOutput)")
        let long = VigilBinary.run(["devices", "--url", url, "--timeout", "30"])
        #expect(long.status == 0 && long.output.contains("video: h264 160x120"), "the relay works: \(long.output)\(long.errorOutput)")

        let dir = try TemporaryDirectory()
        defer { dir.remove() }
        let file = dir.path + "/vigil.toml"
        try """
            [storage]
            root = "\(dir.path)/data"

            [cameras.porch]
            url = "\(url)"
            """.write(toFile: file, atomically: true, encoding: .utf8)
        let check = VigilBinary.run(["check-config", "--timeout", "3", file])
        #expect(check.status == 0 && check.output.contains("camera porch: note: cannot reach \(url): timed out waiting for the answer to "), "\(check.output)\(check.errorOutput)")
    }

    @Test func aTimeoutOutOfRangeIsAUsageError() {
        for command in [["devices", "--url", "rtsp://127.0.0.1/cam"], ["check-config", "/nonexistent.toml"]] {
            let result = VigilBinary.run(command + ["--timeout", "0"])
            #expect(result.status == 64 && result.errorOutput.contains("--timeout must be 1–3600, not 0"), "\(result.errorOutput)")
        }
    }
}
