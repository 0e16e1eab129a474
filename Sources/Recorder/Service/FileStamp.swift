import Glibc

/// A file's modification time and size, to notice that it changed.
struct FileStamp: Equatable, Sendable {
    let modified: Int
    let modifiedNanos: Int
    let size: Int64

    init?(_ path: String) {
        var st = stat()
        guard stat(path, &st) == 0 else { return nil }
        modified = st.st_mtim.tv_sec
        modifiedNanos = st.st_mtim.tv_nsec
        size = Int64(st.st_size)
    }
}
