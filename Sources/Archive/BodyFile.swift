import Glibc
import NIOCore
import Plumbing

/// An HTTP body written into a local file on a `BlockingIO` thread (never the cooperative pool):
/// an archived object downloaded for a clip or an export, another node's recording fetched for
/// a clip. A body longer than `atMost` is cut off with an error: what comes from outside has a
/// limit, and a file of the wrong size is worth nothing.
public enum BodyFile {
    public static func save<Body: AsyncSequence>(
        _ body: Body, to destination: String, io: BlockingIO, atMost limit: Int64 = .max
    ) async throws where Body.Element == ByteBuffer {
        let fd = try await io.run { () throws -> Int32 in
            let fd = Glibc.open(destination, O_WRONLY | O_CREAT | O_TRUNC | O_CLOEXEC, 0o600)
            guard fd >= 0 else { throw ArchiveFileReader.ReadError.failed(destination, String(cString: strerror(errno))) }
            return fd
        }
        var failure: (any Error)?
        var total: Int64 = 0
        do {
            for try await chunk in body {
                total = total.addingReportingOverflow(Int64(chunk.readableBytes)).partialValue
                guard total <= limit else { throw ArchiveFileReader.ReadError.failed(destination, "the answer is longer than the \(limit) bytes expected") }
                try await io.run {
                    try chunk.withUnsafeReadableBytes { raw in
                        var written = 0
                        while written < raw.count {
                            let n = write(fd, raw.baseAddress! + written, raw.count - written)
                            if n < 0 {
                                if errno == EINTR { continue }
                                throw ArchiveFileReader.ReadError.failed(destination, String(cString: strerror(errno)))
                            }
                            written += n
                        }
                    }
                }
            }
        } catch {
            failure = error
        }
        let closeError = await io.run { Glibc.close(fd) == 0 ? nil : String(cString: strerror(errno)) }
        if let failure { throw failure }
        if let closeError { throw ArchiveFileReader.ReadError.failed(destination, closeError) }
    }
}
