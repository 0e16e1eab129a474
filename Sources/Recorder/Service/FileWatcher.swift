import Foundation
import Glibc
import Logging

/// Tells when a file may have changed: inotify on its folder (editors save by writing in place
/// or by renaming a new file over it), read on a thread of its own that sleeps in `poll` until
/// the kernel has news. Whoever listens compares the file's stamp to see whether it really did.
enum FileWatcher {
    /// Changes in the folder of `path` until the stream is dropped. Nothing (and a warning) when
    /// the folder cannot be watched.
    static func changes(of path: String, logger: Logger) -> AsyncStream<Void> {
        let (stream, continuation) = AsyncStream<Void>.makeStream(bufferingPolicy: .bufferingNewest(1))
        let folder = (URL(fileURLWithPath: path).standardizedFileURL.path as NSString).deletingLastPathComponent
        let watch = inotify_init1(Int32(IN_CLOEXEC | IN_NONBLOCK))
        let mask = UInt32(IN_CLOSE_WRITE | IN_MOVED_TO | IN_CREATE | IN_DELETE | IN_ATTRIB)
        var wake: [Int32] = [-1, -1]
        guard watch >= 0, inotify_add_watch(watch, folder, mask) >= 0, pipe(&wake) == 0 else {
            logger.warning("cannot watch \(folder) (\(String(cString: strerror(errno)))): a change of \(path) is seen on SIGHUP only")
            if watch >= 0 { close(watch) }
            continuation.finish()
            return stream
        }
        let (stopRead, stopWrite) = (wake[0], wake[1])
        continuation.onTermination = { _ in _ = write(stopWrite, "x", 1) }
        let thread = Thread {
            var buffer = [UInt8](repeating: 0, count: 4096)
            var fds = [pollfd(fd: watch, events: Int16(POLLIN), revents: 0), pollfd(fd: stopRead, events: Int16(POLLIN), revents: 0)]
            while true {
                fds[0].revents = 0
                fds[1].revents = 0
                if poll(&fds, 2, -1) < 0 && errno != EINTR { break }
                if fds[1].revents != 0 { break }
                var changed = false
                while read(watch, &buffer, buffer.count) > 0 { changed = true }
                if changed { continuation.yield() }
            }
            close(watch)
            close(stopRead)
            close(stopWrite)
        }
        thread.name = "vigil-config-watch"
        thread.start()
        return stream
    }
}
