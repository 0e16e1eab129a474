import Glibc

/// `Servers/tcp-proxy.py` in front of a TCP server: the cluster tests put one node's database
/// connections through it, then cut that node off alone (the proxy stopped with SIGSTOP: connects
/// still complete, no byte passes, as in a network partition) and heal it (SIGCONT). Stopped, its
/// port refuses connections, as a server that is down; a new proxy on the same port brings it back.
public final class TCPProxy: Sendable {
    private let server: PythonTestServer
    public let port: Int

    /// `port`: where it listens (nil: a free port).
    public init(upstreamPort: Int, port: Int? = nil) throws {
        server = try PythonTestServer("tcp-proxy.py", ["--upstream", "127.0.0.1:\(upstreamPort)"] + (port.map { ["--port", "\($0)"] } ?? []))
        let words = server.firstLine.split(separator: " ")
        guard words.count == 2, words[0] == "PORT", let port = Int(words[1]) else {
            server.stop()
            throw LoopbackCameraServerError(message: "the TCP proxy did not start: \(server.firstLine)")
        }
        self.port = port
    }

    /// No byte passes either way until `heal()`.
    public func cut() { server.signal(SIGSTOP) }
    public func heal() { server.signal(SIGCONT) }
    public func stop() { server.stop() }
}
