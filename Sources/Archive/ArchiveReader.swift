import Plumbing
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

    /// The object of a file (path relative to the storage root), whole or a byte range of it;
    /// `node`: another cluster node's file (nil: this node's). A file this node archived before
    /// it joined a cluster is read from its key of then.
    public func open(path: String, node: String? = nil, range: ClosedRange<Int64>?) async throws -> S3ObjectStream {
        let key = settings.key(for: path, node: node)
        let before = node == nil || node == settings.node ? settings.keyBeforeCluster(for: path) : nil
        do {
            return try await client.getObject(key: key, range: range)
        } catch {
            guard let before, error.status == 404 else { throw error }
            return try await client.getObject(key: before, range: range)
        }
    }

    /// A URL that reads the object for an hour without keys. With `[cluster]` the bucket is
    /// asked first whether the file is under this node's folder or its key from before.
    public func presignedURL(path: String, node: String? = nil) async -> String {
        var key = settings.key(for: path, node: node)
        if node == nil, let before = settings.keyBeforeCluster(for: path), await isMissing(key) { key = before }
        return client.presignedGetURL(key: key, expires: 3600)
    }

    /// True when the bucket answers that it has no object `key` (false when it cannot say).
    private func isMissing(_ key: String) async -> Bool {
        do { return try await client.headObject(key: key) == nil } catch { return false }
    }

    /// Whether the bucket holds `node`'s file `path` (a HEAD request).
    public func exists(path: String, node: String) async throws -> Bool {
        try await client.headObject(key: settings.key(for: path, node: node)) != nil
    }

    /// Downloads the object of `path` (`node`: another cluster node's, nil: this node's) into
    /// `destination` (created, or replaced), writing on `io`; an object longer than `atMost`
    /// bytes is an error.
    public func download(path: String, node: String? = nil, to destination: String, io: BlockingIO, atMost: Int64 = .max) async throws {
        try await BodyFile.save(try await open(path: path, node: node, range: nil).body, to: destination, io: io, atMost: atMost)
    }
}
