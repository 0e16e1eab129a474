import Foundation
import SystemPackage

/// Durable file operations: data reaches the disk before a name says it is complete.
public enum DurableFile {
    /// fsyncs `path`, renames it to `finalPath` and fsyncs the directory (Moonfire's protocol).
    public static func commit(_ path: String, to finalPath: String) throws {
        try sync(path)
        guard rename(path, finalPath) == 0 else { throw CaptureError.file(operation: "rename", path: path, errno: Errno(rawValue: errno)) }
        try sync(directory(of: finalPath))
    }

    /// The directory holding `path`: "." for a bare file name such as `clip.mp4`.
    static func directory(of path: String) -> String {
        let directory = (path as NSString).deletingLastPathComponent
        return directory.isEmpty ? "." : directory
    }

    static func sync(_ path: String) throws {
        let fd = open(path, O_RDONLY)
        guard fd >= 0 else { throw CaptureError.file(operation: "open", path: path, errno: Errno(rawValue: errno)) }
        defer { close(fd) }
        guard fsync(fd) == 0 else { throw CaptureError.file(operation: "fsync", path: path, errno: Errno(rawValue: errno)) }
    }

    /// Writes `bytes` to `path` atomically (temporary file, fsync, rename).
    public static func write(_ bytes: UnsafeRawBufferPointer, to path: String) throws {
        let temporary = path + StorageLayout.partialSuffix
        let fd = open(temporary, O_WRONLY | O_CREAT | O_TRUNC | O_CLOEXEC, 0o666)  // the process umask decides who may read
        guard fd >= 0 else { throw CaptureError.file(operation: "create", path: temporary, errno: Errno(rawValue: errno)) }
        var written = 0
        while written < bytes.count {
            let n = Glibc.write(fd, bytes.baseAddress! + written, bytes.count - written)
            if n < 0 {
                let e = errno
                if e == EINTR { continue }
                close(fd)
                unlink(temporary)
                throw CaptureError.file(operation: "write", path: temporary, errno: Errno(rawValue: e))
            }
            written += n
        }
        close(fd)
        try commit(temporary, to: path)
    }
}
