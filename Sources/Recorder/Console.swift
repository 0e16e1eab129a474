import Foundation
import Glibc
import Logging
import Synchronization

/// Unbuffered writes to standard output and standard error, so status lines appear at once (also
/// through a pipe). A console that cannot be written (a closed pipe, a dropped ssh session: EPIPE,
/// EIO) is reported once in the log and then left alone: it never stops the recorder. (Foundation's
/// `FileHandle.write` traps on such an error, and SIGPIPE would kill the process: see
/// `ignoreBrokenPipes()`.)
public enum Console {
    /// Streams that failed once and are no longer written.
    private static let broken = Mutex<Set<Int32>>([])
    private static let logger = Logger(label: "vigil.console")

    public static func write(_ text: String) { write(text, to: STDOUT_FILENO) }

    public static func line(_ text: String) { write(text + "\n") }

    /// Text for standard error (errors of the command line, progress bars), as it is.
    public static func error(_ text: String) { write(text, to: STDERR_FILENO) }

    /// A process that writes to a pipe whose reader has gone gets EPIPE from `write` instead of
    /// being killed by SIGPIPE. Called once at start-up, before anything is written.
    public static func ignoreBrokenPipes() {
        signal(SIGPIPE, SIG_IGN)
    }

    static func write(_ text: String, to fd: Int32) {
        guard !broken.withLock({ $0.contains(fd) }) else { return }
        var bytes = Array(text.utf8)
        var written = 0
        var failure: Int32 = 0
        bytes.withUnsafeMutableBytes { buffer in
            while written < buffer.count {
                let n = Glibc.write(fd, buffer.baseAddress! + written, buffer.count - written)
                if n >= 0 {
                    written += n
                } else if errno != EINTR && errno != EAGAIN {
                    failure = errno
                    return
                }
            }
        }
        guard failure != 0 else { return }
        let first = broken.withLock { $0.insert(fd).inserted }
        if first {
            let name = fd == STDOUT_FILENO ? "standard output" : fd == STDERR_FILENO ? "standard error" : "descriptor \(fd)"
            logger.warning("\(name) cannot be written (\(String(cString: strerror(failure)))): it is no longer written; recording goes on")
        }
    }
}
