import Plumbing
import S3
import Crypto
import Foundation
import Glibc
import NIOCore
import Recorder

/// Reads the parts of a local file to upload, and hashes them, on the archive's own thread
/// (`BlockingIO`): never on Swift's cooperative pool, and never behind the storage thread's
/// indexing. One pass per part gives the body and its SHA-256.
struct ArchiveFileReader: Sendable {
    let io: BlockingIO

    struct Chunk: Sendable {
        var body: ByteBuffer
        var sha256: [UInt8]
    }

    enum ReadError: Error, CustomStringConvertible {
        case gone(String)
        case failed(String, String)

        var description: String {
            switch self {
            case .gone(let path): return "\(path) is gone"
            case .failed(let path, let why): return "\(path) cannot be read: \(why)"
            }
        }
    }

    /// The size of a file; nil when it does not exist.
    func size(_ path: String) async throws -> Int64? {
        try await io.run {
            var st = stat()
            guard stat(path, &st) == 0 else {
                if errno == ENOENT { return nil }
                throw ReadError.failed(path, String(cString: strerror(errno)))
            }
            return Int64(st.st_size)
        }
    }

    /// `length` bytes from `offset`, and their SHA-256. A file shorter than that is an error (it
    /// changed since it was queued).
    func read(_ path: String, offset: Int64, length: Int) async throws -> Chunk {
        try await io.run {
            let fd = open(path, O_RDONLY | O_CLOEXEC)
            guard fd >= 0 else {
                if errno == ENOENT { throw ReadError.gone(path) }
                throw ReadError.failed(path, String(cString: strerror(errno)))
            }
            defer { close(fd) }
            var buffer = ByteBufferAllocator().buffer(capacity: length)
            var done = 0
            while done < length {
                let n = buffer.writeWithUnsafeMutableBytes(minimumWritableBytes: length - done) { raw in
                    pread(fd, raw.baseAddress, length - done, off_t(offset) + off_t(done))
                }
                if n < 0 {
                    if errno == EINTR { continue }
                    throw ReadError.failed(path, String(cString: strerror(errno)))
                }
                if n == 0 { throw ReadError.failed(path, "it is shorter than \(offset + Int64(length)) bytes (it changed after it was queued)") }
                done += n
            }
            var hasher = SHA256()
            buffer.withUnsafeReadableBytes { hasher.update(bufferPointer: $0) }
            return Chunk(body: buffer, sha256: Array(hasher.finalize()))
        }
    }

    /// SHA-256 of part digests one after another: what S3 reports as a multipart object's
    /// SHA-256 checksum ("composite").
    static func composite(_ digests: [[UInt8]]) -> [UInt8] {
        var hasher = SHA256()
        for digest in digests { hasher.update(data: digest) }
        return Array(hasher.finalize())
    }
}

extension Array where Element == UInt8 {
    var hex: String { map { String(format: "%02x", $0) }.joined() }
    var base64: String { Data(self).base64EncodedString() }

    /// The bytes of a hex string; nil for anything else.
    init?(hex: String) {
        guard hex.count % 2 == 0 else { return nil }
        var bytes: [UInt8] = []
        bytes.reserveCapacity(hex.count / 2)
        var index = hex.startIndex
        while index < hex.endIndex {
            let next = hex.index(index, offsetBy: 2)
            guard let byte = UInt8(hex[index..<next], radix: 16) else { return nil }
            bytes.append(byte)
            index = next
        }
        self = bytes
    }
}
