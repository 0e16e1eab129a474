import Foundation
import Glibc

/// A plain TCP connection to a loopback port, for HTTP clients no library would be: one that
/// never reads, sends half a header, or garbage (the web server's tests).
public final class RawConnection: Sendable {
    public let fd: Int32

    /// `receiveBuffer`: the kernel's receive buffer, set before connecting (a small one makes a
    /// client that does not read visible to the server quickly). `source`: the local address.
    /// `waits` false: the connection is started and not waited for (a server that accepts no
    /// more leaves it in its backlog, or unanswered); the socket stays non-blocking.
    public init(port: Int, receiveBuffer: Int32? = nil, source: String = "127.0.0.1", waits: Bool = true) throws {
        fd = socket(AF_INET, Int32(SOCK_STREAM.rawValue), 0)
        guard fd >= 0 else { throw POSIXError(.EMFILE) }
        if var size = receiveBuffer {
            setsockopt(fd, SOL_SOCKET, SO_RCVBUF, &size, socklen_t(MemoryLayout<Int32>.size))
        }
        var local = sockaddr_in()
        local.sin_family = sa_family_t(AF_INET)
        local.sin_addr.s_addr = inet_addr(source)
        if !waits { _ = fcntl(fd, F_SETFL, fcntl(fd, F_GETFL) | O_NONBLOCK) }
        var remote = local
        remote.sin_addr.s_addr = inet_addr("127.0.0.1")
        remote.sin_port = UInt16(port).bigEndian
        let connected = withUnsafePointer(to: &local) { l in
            withUnsafePointer(to: &remote) { r in
                l.withMemoryRebound(to: sockaddr.self, capacity: 1) { l in
                    r.withMemoryRebound(to: sockaddr.self, capacity: 1) { r in
                        bind(fd, l, socklen_t(MemoryLayout<sockaddr_in>.size)) == 0
                            && (connect(fd, r, socklen_t(MemoryLayout<sockaddr_in>.size)) == 0 || (!waits && errno == EINPROGRESS))
                    }
                }
            }
        }
        guard connected else {
            Glibc.close(fd)
            throw POSIXError(.ECONNREFUSED)
        }
    }

    /// Sends `text` from a thread of its own (a send blocks while the server does not read).
    public func send(_ text: String) async {
        let bytes = Array(text.utf8)
        await withCheckedContinuation { (c: CheckedContinuation<Void, Never>) in
            Thread.detachNewThread {
                self.sendBlocking(bytes)
                c.resume()
            }
        }
    }

    /// Sends `bytes` on this thread (for callers on threads of their own); false when the
    /// server closed or reset the connection first.
    @discardableResult
    public func sendBlocking(_ bytes: [UInt8]) -> Bool {
        var sent = 0
        while sent < bytes.count {
            let n = bytes[sent...].withUnsafeBytes { Glibc.send(fd, $0.baseAddress, $0.count, Int32(MSG_NOSIGNAL)) }
            if n <= 0 { return false }
            sent += n
        }
        return true
    }

    /// Everything until the server closes (`closed`) or `seconds` pass with nothing new; the
    /// blocking reads run on a thread of their own, never on the cooperative pool the server
    /// uses too.
    public func readAll(seconds: Int = 10) async -> (text: String, closed: Bool) {
        await withCheckedContinuation { c in
            Thread.detachNewThread { c.resume(returning: self.readBlocking(seconds: seconds)) }
        }
    }

    /// What arrives until it holds `marker` (or the server closes, or `seconds` pass).
    public func read(until marker: String, seconds: Int = 30) async -> String {
        await withCheckedContinuation { c in
            Thread.detachNewThread { c.resume(returning: self.readBlocking(seconds: seconds, until: marker).text) }
        }
    }

    /// What arrives on this thread until the server closes (`closed`), `marker` arrives, or
    /// `seconds` pass with nothing new.
    public func readBlocking(seconds: Int, until marker: String? = nil) -> (text: String, closed: Bool) {
        var timeout = timeval(tv_sec: seconds, tv_usec: 0)
        setsockopt(fd, SOL_SOCKET, SO_RCVTIMEO, &timeout, socklen_t(MemoryLayout<timeval>.size))
        var answer: [UInt8] = []
        var chunk = [UInt8](repeating: 0, count: 65_536)
        while true {
            if let marker, String(decoding: answer, as: UTF8.self).contains(marker) { return (String(decoding: answer, as: UTF8.self), false) }
            let n = Glibc.read(fd, &chunk, chunk.count)
            if n == 0 || (n < 0 && errno == ECONNRESET) { return (String(decoding: answer, as: UTF8.self), true) }
            if n < 0 { return (String(decoding: answer, as: UTF8.self), false) }
            answer += chunk[0..<n]
        }
    }

    public func close() { Glibc.close(fd) }
}
