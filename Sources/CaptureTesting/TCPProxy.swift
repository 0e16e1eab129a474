import Glibc

/// `Servers/tcp-proxy.py` in front of a TCP server: the cluster tests put one node's database
/// connections through it, then cut that node off alone (the proxy stopped with SIGSTOP: connects
/// still complete, no byte passes, as in a network partition) and heal it (SIGCONT); the camera
/// tests stall a camera the same way, and set its clock (`jumpCameraClock`). Stopped, its port
/// refuses connections, as a server that is down; a new proxy on the same port brings it back.
public final class TCPProxy: Sendable {
    private let server: PythonTestServer
    public let port: Int

    /// `port`: where it listens (nil: a free port). `rtpJumps`: the upstream is an RTSP camera
    /// whose clock `jumpCameraClock` can set (its RTP timestamps, interleaved in the connection).
    public init(upstreamPort: Int, port: Int? = nil, rtpJumps: Bool = false) throws {
        server = try PythonTestServer(
            "tcp-proxy.py", ["--upstream", "127.0.0.1:\(upstreamPort)"] + (port.map { ["--port", "\($0)"] } ?? []) + (rtpJumps ? ["--rtp-jumps"] : []))
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
    /// The camera's RTP timestamps from now on 20 s later (`forward`) or earlier than they were.
    public func jumpCameraClock(forward: Bool) { server.signal(forward ? SIGUSR1 : SIGUSR2) }
    public func stop() { server.stop() }
}
