import Glibc

/// Knowledge of the fragmented MP4 layout Vigil writes: `ftyp`, `moov`, then one `moof`+`mdat`
/// pair per fragment, and `mfra` when the file was finished properly.
public enum FragmentedMP4 {
    public struct Layout: Sendable, Equatable {
        /// Complete `moof`+`mdat` pairs.
        public var completeFragments: Int
        /// Bytes up to the end of the last complete box that a player can use.
        public var usableBytes: Int64
        public var fileBytes: Int64
    }

    /// Walks the file's top-level boxes and finds where its last complete fragment ends.
    public static func layout(of path: String) throws(MediaError) -> Layout {
        let fd = open(path, O_RDONLY | O_CLOEXEC)
        guard fd >= 0 else { throw MediaError(operation: "open \(path)", code: -errno) }
        defer { close(fd) }
        var st = stat()
        guard fstat(fd, &st) == 0 else { throw MediaError(operation: "stat \(path)", code: -errno) }
        let size = Int64(st.st_size)
        var offset: Int64 = 0, usable: Int64 = 0, fragments = 0
        var moofPending = false
        var header = [UInt8](repeating: 0, count: 16)
        while offset + 8 <= size {
            guard pread(fd, &header, 16, off_t(offset)) >= 8 else { break }
            var boxSize = Int64(header[0]) << 24 | Int64(header[1]) << 16 | Int64(header[2]) << 8 | Int64(header[3])
            let type = String(decoding: header[4..<8], as: UTF8.self)
            if boxSize == 1 {
                boxSize = header[8..<16].reduce(Int64(0)) { $0 << 8 | Int64($1) }
            } else if boxSize == 0 {
                boxSize = size - offset
            }
            guard boxSize >= 8, offset + boxSize <= size else { break }
            switch type {
            case "moof":
                moofPending = true
            case "mdat" where moofPending:
                moofPending = false
                fragments += 1
                usable = offset + boxSize
            case "ftyp", "moov", "mfra", "free":
                if !moofPending { usable = offset + boxSize }
            default:
                break
            }
            offset += boxSize
        }
        return Layout(completeFragments: fragments, usableBytes: usable, fileBytes: size)
    }

    /// Cuts a file cut short (crash, full disk) back to its last complete fragment, so every
    /// byte left plays. Returns the layout after trimming.
    @discardableResult
    public static func trimToCompleteFragments(_ path: String) throws(MediaError) -> Layout {
        var l = try layout(of: path)
        if l.usableBytes < l.fileBytes {
            guard truncate(path, off_t(l.usableBytes)) == 0 else {
                throw MediaError(operation: "truncate \(path)", code: -errno)
            }
            l.fileBytes = l.usableBytes
        }
        return l
    }
}
