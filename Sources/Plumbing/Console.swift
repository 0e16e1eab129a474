import Dispatch
import Glibc
import Logging
import Synchronization

/// Standard output and standard error, written by a thread of their own (`ConsoleWriter`): a
/// status line or a log line never blocks the task or event loop that says it, even when the
/// terminal stops reading (a paused ssh session, a pager that is not paging). What is said is
/// queued up to a limit; beyond it lines are dropped and counted, and the count is said once the
/// terminal reads again. At exit the queue is written out (for a while, if nobody reads).
public enum Console {
    /// The process's writer; what it holds at exit is written out first (for at most 2 s).
    static let shared: ConsoleWriter = {
        atexit { Console.shared.flush(waitingAtMost: 2_000_000_000) }
        return ConsoleWriter(limitBytes: 1 << 20)
    }()

    public static func write(_ text: String) { shared.write(text, to: STDOUT_FILENO) }

    public static func line(_ text: String) { write(text + "\n") }

    /// Text for standard error (errors of the command line, progress bars), as it is.
    public static func error(_ text: String) { shared.write(text, to: STDERR_FILENO) }

    /// A process that writes to a pipe whose reader has gone gets EPIPE from `write` instead of
    /// being killed by SIGPIPE. Called once at start-up, before anything is written.
    public static func ignoreBrokenPipes() {
        signal(SIGPIPE, SIG_IGN)
    }
}

/// Writes text to file descriptors from one serial queue, in the order it was given.
///
/// A descriptor that fails (a closed pipe, a dropped ssh session: EPIPE, EIO) is reported once
/// in the log and then left alone: it never stops the recorder. A non-blocking descriptor (a
/// terminal a parent set O_NONBLOCK on) is waited for with `poll`, not spun on.
final class ConsoleWriter: Sendable {
    private struct State {
        var queuedBytes = 0
        /// Lines not queued because the queue was full, not yet said.
        var dropped = 0
        /// Lines dropped since the start.
        var droppedTotal = 0
        /// Descriptors that failed once and are no longer written.
        var broken: Set<Int32> = []
    }

    private let queue = DispatchQueue(label: "vigil.console")
    private let state = Mutex(State())
    /// Bytes queued at most; past this, text is dropped.
    let limitBytes: Int
    private static let logger = Logger(label: "vigil.console")

    init(limitBytes: Int) { self.limitBytes = limitBytes }

    /// Lines dropped and not yet said, and since the start.
    var droppedCount: (unsaid: Int, total: Int) { state.withLock { ($0.dropped, $0.droppedTotal) } }

    /// Queues `text` for `fd` and returns at once.
    func write(_ text: String, to fd: Int32) {
        let bytes = Array(text.utf8)
        let queued = state.withLock { s -> Bool in
            guard !s.broken.contains(fd) else { return false }
            // An empty queue takes any text, however long (a command's whole listing).
            guard s.queuedBytes == 0 || s.queuedBytes + bytes.count <= limitBytes else {
                s.dropped += 1
                s.droppedTotal += 1
                return false
            }
            s.queuedBytes += bytes.count
            return true
        }
        guard queued else { return }
        queue.async { [self] in
            let dropped = state.withLock { s in
                defer { s.dropped = 0 }
                return s.dropped
            }
            if dropped > 0 {
                writeAll(Array("vigil: \(dropped) line(s) of output were dropped: the terminal was not reading\n".utf8), to: STDERR_FILENO)
            }
            writeAll(bytes, to: fd)
            state.withLock { $0.queuedBytes -= bytes.count }
        }
    }

    /// Returns once everything queued before it is written, or after `nanos`.
    func flush(waitingAtMost nanos: Int) {
        let done = DispatchSemaphore(value: 0)
        queue.async { done.signal() }
        _ = done.wait(timeout: .now() + .nanoseconds(nanos))
    }

    private func writeAll(_ bytes: [UInt8], to fd: Int32) {
        guard !state.withLock({ $0.broken.contains(fd) }) else { return }
        var written = 0
        var failure: Int32 = 0
        bytes.withUnsafeBytes { buffer in
            while written < buffer.count {
                let n = Glibc.write(fd, buffer.baseAddress! + written, buffer.count - written)
                if n >= 0 {
                    written += n
                } else if errno == EAGAIN {
                    var wanted = pollfd(fd: fd, events: Int16(POLLOUT), revents: 0)
                    _ = poll(&wanted, 1, -1)
                } else if errno != EINTR {
                    failure = errno
                    return
                }
            }
        }
        guard failure != 0 else { return }
        let first = state.withLock { $0.broken.insert(fd).inserted }
        if first {
            let name = fd == STDOUT_FILENO ? "standard output" : fd == STDERR_FILENO ? "standard error" : "descriptor \(fd)"
            Self.logger.warning("\(name) cannot be written (\(String(cString: strerror(failure)))): it is no longer written; recording goes on")
        }
    }
}
