import S3
import Foundation
import Glibc
import NIOCore
import Recorder

/// Reads archived files back for the web server, clips and `vigil export`: a byte range passed
/// through from the bucket, a presigned URL for a browser (`[archive] redirect = true`), or a
/// whole object downloaded into a local file when a tool needs one on disk.
public struct ArchiveReader: Sendable {
    public let settings: ArchiveSettings
    let client: S3Client

    init(settings: ArchiveSettings, client: S3Client) {
        self.settings = settings
        self.client = client
    }

    /// A reader with a client of its own (`vigil export`); `close()` it when done.
    public init(settings: ArchiveSettings, requestTimeoutSeconds: Int64? = nil) {
        self.init(settings: settings, client: S3Client(endpoint: ArchiveService.endpoint(settings), keys: ArchiveService.keys(settings),
                                                       requestTimeout: .seconds(requestTimeoutSeconds ?? Int64(settings.timeoutSeconds))))
    }

    /// Lists the bucket once (`check-config`): its keys and name are right and it answers.
    public func checkBucket() async throws { try await client.checkBucket() }

    /// Closes its client's connections.
    public func close() async { try? await client.shutdown() }

    /// The object of a file (path relative to the storage root), whole or a byte range of it.
    public func open(path: String, range: ClosedRange<Int64>?) async throws -> S3ObjectStream {
        try await client.getObject(key: settings.key(for: path), range: range)
    }

    /// A URL that reads the object for an hour without keys.
    public func presignedURL(path: String) -> String {
        client.presignedGetURL(key: settings.key(for: path), expires: 3600)
    }

    /// Downloads the object of `path` into `destination` (created, or replaced), writing on `io`.
    public func download(path: String, to destination: String, io: BlockingIO) async throws {
        let stream = try await open(path: path, range: nil)
        let fd = try await io.run { () throws -> Int32 in
            let fd = Glibc.open(destination, O_WRONLY | O_CREAT | O_TRUNC | O_CLOEXEC, 0o600)
            guard fd >= 0 else { throw ArchiveFileReader.ReadError.failed(destination, String(cString: strerror(errno))) }
            return fd
        }
        var failure: (any Error)?
        do {
            for try await chunk in stream.body {
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
