import Glibc
import Media
import Plumbing

/// A TCP connection to an RTSP server. Every wait has a deadline and ends within 100 ms of
/// an abort, so no call can hang the capture thread or a stop. One receive buffer, allocated
/// once per connection, holds what arrived and not yet parsed (`unread`): RTSP answers and
/// interleaved RTP packets are read from it in place, and a burst of packets costs one `recv`.
final class RTSPSocket {
    private let fd: Int32
    private let interrupt: NetworkInterrupt
    private let buffer: UnsafeMutableRawBufferPointer
    private var start = 0
    private var end = 0
    /// The last `recv` left nothing behind in the kernel: wait before the next one.
    private var drained = true
    /// Receives at most this often (0: as soon as anything arrives); see `RTSPClient.readInterval`.
    var readIntervalNanos: Int64 = 0
    private var lastReceive: Int64 = 0

    /// SOCK_NONBLOCK | SOCK_CLOEXEC (Linux values; the release build's Glibc module does not
    /// always export them): never blocking, and not inherited by hooks Vigil starts.
    private static let nonblockingAndCloseOnExec: Int32 = 0o4000 | 0o2000000

    /// Large enough for the biggest interleaved packet (4 + 65535 bytes) several times over.
    static let capacity = 256 * 1024

    init(host: String, port: Int, deadlineNanos: Int64, interrupt: NetworkInterrupt) throws(NetworkFailure) {
        self.interrupt = interrupt
        // Resolved on a thread of its own: a resolver that does not answer must not hold up a stop.
        let addresses = try HostResolver.resolve(host, port: port, until: deadlineNanos, interrupt: interrupt)
        var failure = NetworkFailure.unreachable
        var connected: Int32 = -1
        for address in addresses where connected < 0 {
            let s = socket(address.family, Int32(SOCK_STREAM.rawValue) | Self.nonblockingAndCloseOnExec, 0)
            guard s >= 0 else { continue }
            do throws(NetworkFailure) {
                if address.withSocketAddress({ connect(s, $0, $1) }) != 0 {
                    guard errno == EINPROGRESS else { throw Self.failure(errno) }
                    try Self.wait(s, for: Int16(POLLOUT), until: deadlineNanos, interrupt: interrupt)
                    var error: Int32 = 0
                    var length = socklen_t(MemoryLayout<Int32>.size)
                    getsockopt(s, SOL_SOCKET, SO_ERROR, &error, &length)
                    if error != 0 { throw Self.failure(error) }
                }
                connected = s
            } catch {
                Glibc.close(s)
                failure = error
                if error == .aborted || error == .timeout { throw error }
            }
        }
        guard connected >= 0 else { throw failure }
        fd = connected
        var one: Int32 = 1
        setsockopt(fd, Int32(IPPROTO_TCP), TCP_NODELAY, &one, socklen_t(MemoryLayout<Int32>.size))
        buffer = UnsafeMutableRawBufferPointer.allocate(byteCount: Self.capacity, alignment: 16)
    }

    deinit {
        Glibc.close(fd)
        buffer.deallocate()
    }

    /// Bytes received and not consumed yet.
    var unread: UnsafeRawBufferPointer { UnsafeRawBufferPointer(rebasing: buffer[start..<end]) }

    /// Whether the buffer holds as much as it can (a reader waiting for more would wait forever).
    var isFull: Bool { start == 0 && end == buffer.count }

    func consume(_ count: Int) {
        start += count
        if start == end { start = 0; end = 0 }
    }

    /// Waits until more bytes arrived (at least one), or throws: `.ended` when the server
    /// closed the connection, `.timeout` at the deadline, `.aborted` on abort.
    func receive(until deadlineNanos: Int64) throws(NetworkFailure) {
        if end == buffer.count {
            // Keep the unread bytes, moved to the front.
            guard start > 0 else { throw .badStream("an RTSP message larger than \(buffer.count) bytes") }
            (buffer.baseAddress!).copyMemory(from: buffer.baseAddress! + start, byteCount: end - start)
            end -= start
            start = 0
        }
        while true {
            if drained {
                if readIntervalNanos > 0 { try pause(until: min(lastReceive + readIntervalNanos, deadlineNanos)) }
                try Self.wait(fd, for: Int16(POLLIN), until: deadlineNanos, interrupt: interrupt)
            }
            let room = buffer.count - end
            let n = recv(fd, buffer.baseAddress! + end, room, Int32(MSG_DONTWAIT))
            if n > 0 {
                end += n
                drained = n < room
                lastReceive = SystemClocks.monotonicNanos()
                return
            }
            if n == 0 { throw .ended }
            switch errno {
            case EAGAIN, EWOULDBLOCK: drained = true
            case EINTR: continue
            default: throw Self.failure(errno)
            }
        }
    }

    /// Sends all of `text`, waiting for room until the deadline.
    func send(_ text: String, until deadlineNanos: Int64) throws(NetworkFailure) {
        var bytes = Array(text.utf8)[...]
        while !bytes.isEmpty {
            let n = bytes.withUnsafeBytes { Glibc.send(fd, $0.baseAddress, $0.count, Int32(MSG_NOSIGNAL) | Int32(MSG_DONTWAIT)) }
            if n > 0 {
                bytes = bytes.dropFirst(n)
            } else if n < 0 && (errno == EAGAIN || errno == EWOULDBLOCK) {
                try Self.wait(fd, for: Int16(POLLOUT), until: deadlineNanos, interrupt: interrupt)
            } else if n < 0 && errno != EINTR {
                throw Self.failure(errno)
            }
        }
    }

    /// Sleeps until `monotonicNanos` (in slices of at most 100 ms, so that an abort is seen soon).
    private func pause(until monotonicNanos: Int64) throws(NetworkFailure) {
        while true {
            if interrupt.isAborted { throw .aborted }
            let left = monotonicNanos - SystemClocks.monotonicNanos()
            if left <= 0 { return }
            _ = poll(nil, 0, Int32(min(left / 1_000_000 + 1, 100)))
        }
    }

    /// Polls in slices of at most 100 ms, so that an abort from another thread is seen soon.
    private static func wait(_ fd: Int32, for events: Int16, until deadlineNanos: Int64, interrupt: NetworkInterrupt) throws(NetworkFailure) {
        while true {
            if interrupt.isAborted { throw .aborted }
            let left = deadlineNanos - SystemClocks.monotonicNanos()
            if left <= 0 { throw .timeout }
            var entry = pollfd(fd: fd, events: events, revents: 0)
            let ready = poll(&entry, 1, Int32(min(left / 1_000_000 + 1, 100)))
            if ready > 0 { return }
            if ready < 0 && errno != EINTR { throw failure(errno) }
        }
    }

    static func failure(_ code: Int32) -> NetworkFailure {
        switch code {
        case ECONNREFUSED: return .refused
        case ETIMEDOUT: return .timeout
        case EHOSTUNREACH, ENETUNREACH: return .unreachable
        case ECONNRESET, EPIPE: return .ended
        default: return .other(String(cString: strerror(code)))
        }
    }
}
