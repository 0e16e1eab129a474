import Capture
import Glibc
import Logging

/// Room only the index may use: a file of allocated blocks under the root
/// (`StorageLayout.indexReservePath`). When an index write finds the disk full even after a
/// sweep (nothing finished left to delete: the file whose row waits is still listed as being
/// written), the reserve is given up and the write tried again; it is made again once there is
/// room, before the writers the keeper held back go on (`StorageRoom`). Used only on
/// `StorageKeeper.io`; an index kept in memory has none.
final class IndexReserve {
    private let path: String?
    private let root: String
    private let logger: Logger
    /// The reserve's size, chosen from the disk's when it is first made.
    private(set) var bytes: Int64 = 0
    private(set) var isInPlace = false

    init(layout: StorageLayout, indexOnDisk: Bool, logger: Logger) {
        path = indexOnDisk ? layout.indexReservePath : nil
        root = layout.root
        self.logger = logger
        // The last run's reserve is kept as it is, when all of it is allocated.
        var st = stat()
        if let path, stat(path, &st) == 0, st.st_size > 0 {
            bytes = Int64(st.st_size)
            isInPlace = Int64(st.st_blocks) * 512 >= bytes
        }
    }

    /// A sixteenth of the disk, at least 32 KiB (a few pages of the write-ahead log: what one
    /// indexed file and a checkpoint take) and at most 4 MiB.
    static func size(totalBytes: Int64) -> Int64 { min(max(totalBytes / 16, 32 * 1024), 4 * 1024 * 1024) }

    /// The bytes that are not reserved yet.
    var missingBytes: Int64 {
        guard path != nil, !isInPlace else { return 0 }
        return bytes > 0 ? bytes : StorageRoom.space(root).map { Self.size(totalBytes: $0.total) } ?? 0
    }

    /// Makes the reserve when it is not in place (a file already there from the last run is
    /// kept); true when it is, or when there is none to make (an index in memory).
    @discardableResult
    func restore() -> Bool {
        guard let path else { return true }
        if isInPlace { return true }
        if bytes == 0 { bytes = missingBytes }
        // Created like every other file under the root: its mode is the configured one (the umask).
        let fd = open(path, O_WRONLY | O_CREAT | O_CLOEXEC, 0o666)
        guard fd >= 0 else { return false }
        defer { close(fd) }
        // Allocated blocks, not a sparse file: a file of holes holds no room.
        guard posix_fallocate(fd, 0, off_t(bytes)) == 0 else {
            unlink(path)
            return false
        }
        // One left by a run on a larger disk keeps only this disk's share.
        _ = ftruncate(fd, off_t(bytes))
        isInPlace = true
        return true
    }

    /// Gives the reserve's room to the index; false when there was none to give.
    func release() -> Bool {
        guard let path, isInPlace else { return false }
        unlink(path)
        isInPlace = false
        logger.warning("the disk under \(root) is full: the index uses its reserve (\(bytes / 1024) KiB) to record what was written")
        return true
    }
}
