internal import CFFmpeg
import Glibc

/// Where a muxer's bytes go: a file written through Vigil's own I/O context with a 1 MiB
/// buffer. FFmpeg's default 32 KiB buffer turns one 500 KiB camera frame into 16 write calls;
/// this writes it in one.
final class FileSink {
    let context: UnsafeMutablePointer<AVIOContext>
    private var fd: Int32
    let path: String
    static let bufferSize: Int32 = 1 << 20

    init(path: String) throws(MediaError) {
        self.path = path
        let fd = open(path, O_WRONLY | O_CREAT | O_TRUNC | O_CLOEXEC, 0o666)  // the process umask decides who may read
        guard fd >= 0 else { throw MediaError(operation: "open \(path) for writing", code: cffmpeg_error_from_errno(errno)) }
        guard let buffer = av_malloc(Int(Self.bufferSize)),
              let io = avio_alloc_context(
                buffer.assumingMemoryBound(to: UInt8.self), Self.bufferSize, 1,
                UnsafeMutableRawPointer(bitPattern: Int(fd) + 1), nil, Self.write, Self.seek)
        else {
            Glibc.close(fd)
            throw MediaError(operation: "avio_alloc_context", message: "out of memory")
        }
        self.fd = fd
        context = io
    }

    /// Flushes and closes; returns the first error met while writing, if any.
    func close() -> Int32 {
        guard fd >= 0 else { return 0 }
        avio_flush(context)
        var status = context.pointee.error
        av_freep(&context.pointee.buffer)
        var io: UnsafeMutablePointer<AVIOContext>? = context
        avio_context_free(&io)
        if Glibc.close(fd) != 0, status >= 0 { status = cffmpeg_error_from_errno(errno) }
        fd = -1
        return status
    }

    deinit { _ = close() }

    private static let write: @convention(c) (UnsafeMutableRawPointer?, UnsafeMutablePointer<UInt8>?, Int32) -> Int32 = { opaque, buffer, size in
        let fd = Int32(Int(bitPattern: opaque) - 1)
        var done = 0
        while done < Int(size) {
            let n = Glibc.write(fd, buffer! + done, Int(size) - done)
            if n < 0 {
                if errno == EINTR { continue }
                return cffmpeg_error_from_errno(errno)
            }
            done += n
        }
        return size
    }

    private static let seek: @convention(c) (UnsafeMutableRawPointer?, Int64, Int32) -> Int64 = { opaque, offset, whence in
        let fd = Int32(Int(bitPattern: opaque) - 1)
        if whence & AVSEEK_SIZE != 0 {
            var st = stat()
            return fstat(fd, &st) == 0 ? Int64(st.st_size) : Int64(cffmpeg_error_from_errno(errno))
        }
        let r = lseek(fd, off_t(offset), whence & ~AVSEEK_FORCE)
        return r >= 0 ? Int64(r) : Int64(cffmpeg_error_from_errno(errno))
    }
}
