import Foundation

/// Checks a storage root before any camera starts, so a bad path fails with advice, not later.
public enum StorageCheck {
    /// Creates `path` if needed and proves a file can be created and removed there.
    public static func ensureWritable(_ path: String) throws {
        do {
            try FileManager.default.createDirectory(atPath: path, withIntermediateDirectories: true)
        } catch {
            throw RecorderError.storageUnwritable(path: path, reason: Self.reason(error))
        }
        let probe = "\(path)/.vigil-write-test-\(getpid())"
        let fd = open(probe, O_WRONLY | O_CREAT | O_EXCL | O_CLOEXEC, 0o600)
        guard fd >= 0 else { throw RecorderError.storageUnwritable(path: path, reason: String(cString: strerror(errno))) }
        close(fd)
        unlink(probe)
    }

    private static func reason(_ error: Error) -> String {
        let ns = error as NSError
        if let underlying = ns.userInfo[NSUnderlyingErrorKey] as? NSError, underlying.domain == NSPOSIXErrorDomain {
            return String(cString: strerror(Int32(underlying.code)))
        }
        return ns.localizedDescription
    }
}
