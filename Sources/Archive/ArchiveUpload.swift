import Plumbing
import S3
import Capture
import Foundation
import Logging
import NIOCore
import Recorder

/// Copies one queued file to the bucket and confirms it: a single PUT up to the multipart
/// threshold, parts above it. Every step is in the index first (the upload id, each part the
/// bucket answered 200 for), so after kill -9 the next start resumes where this one stopped:
/// parts the bucket lists with the right size are not sent again. The file counts as archived
/// only once HEAD shows the object with its size and SHA-256 checksum.
struct ArchiveUpload: Sendable {
    let client: S3Client
    let settings: ArchiveSettings
    let index: RecordingIndex
    let root: String
    let reader: ArchiveFileReader
    let rate: UploadRate?

    /// What became of a file.
    enum Outcome: Sendable {
        case archived(bytes: Int64)
        /// Gone from the disk before it was uploaded: dropped from the queue.
        case vanished
    }

    /// A problem with this file only (it changed, the bucket refused its checksum): it starts
    /// over, and other files go on.
    struct FileProblem: Error, CustomStringConvertible {
        var description: String
    }

    private var io: BlockingIO { reader.io }

    func run(_ item: RecordingIndex.ArchiveItem) async throws -> Outcome {
        let path = StorageLayout(root: root).absolute(item.path)
        let key = settings.key(for: item.path)
        guard let size = try await reader.size(path) else {
            if let uploadID = item.uploadID { try? await client.abortMultipartUpload(key: key, uploadID: uploadID) }
            try await io.run { try index.removeFromArchive(path: item.path) }
            return .vanished
        }
        let metadata = try await io.run {
            ArchiveMetadata.headers(recording: try index.entry(path: item.path), event: try index.motionEvent(picture: item.path))
        }
        let contentType = StorageLayout.contentType(item.path)
        if size <= Int64(settings.multipartThreshold) {
            guard let length = Int(exactly: size) else { throw FileProblem(description: "\(path) is too large") }
            let chunk = try await reader.read(path, offset: 0, length: length)
            try await io.run { try index.startUpload(path: item.path, bytes: size, sha256: chunk.sha256.hex, uploadID: nil, partSize: nil) }
            await rate?.take(bytes: size)
            _ = try await client.putObject(key: key, body: chunk.body, sha256: chunk.sha256, contentType: contentType, metadata: metadata)
            try await confirm(key: key, size: size, checksum: chunk.sha256.base64, path: path)
        } else {
            let digests = try await uploadParts(item, path: path, key: key, size: size, contentType: contentType, metadata: metadata)
            try await confirm(key: key, size: size, checksum: ArchiveFileReader.composite(digests).base64, path: path)
        }
        try await io.run { try index.markArchived(path: item.path, nowNanos: SystemClocks.wallNanos()) }
        return .archived(bytes: size)
    }

    /// Sends the parts the bucket does not hold yet and completes the upload; returns every
    /// part's digest in order.
    private func uploadParts(
        _ item: RecordingIndex.ArchiveItem, path: String, key: String, size: Int64, contentType: String, metadata: [String: String]
    ) async throws -> [[UInt8]] {
        let partSize = Int64(settings.partSize)
        let count = Int((size + partSize - 1) / partSize)
        var uploadID = item.uploadID
        var done: [Int: RecordingIndex.ArchivePart] = [:]
        if let id = uploadID, item.partSize == settings.partSize, item.bytes == size {
            // Resuming after a restart: what the bucket lists, checked against what the index kept.
            var listed: [S3ListedPart] = []
            do {
                listed = try await client.listParts(key: key, uploadID: id)
            } catch {
                guard error.code == "NoSuchUpload" else { throw error }
                uploadID = nil
            }
            if uploadID != nil {
                let kept = Dictionary(try await io.run { try index.archiveParts(path: item.path) }.map { ($0.number, $0) }, uniquingKeysWith: { a, _ in a })
                for part in listed where (1...count).contains(part.number) && part.size == Self.length(of: part.number, size: size, partSize: partSize) {
                    if let known = kept[part.number], known.bytes == part.size {
                        done[part.number] = RecordingIndex.ArchivePart(number: part.number, bytes: part.size, etag: part.etag, sha256: known.sha256)
                    } else {
                        // Killed after the bucket's 200 but before the index kept it: hashed again here, not sent again.
                        let chunk = try await reader.read(path, offset: Int64(part.number - 1) * partSize, length: Int(part.size))
                        let confirmed = RecordingIndex.ArchivePart(number: part.number, bytes: part.size, etag: part.etag, sha256: chunk.sha256.hex)
                        try await io.run { try index.addArchivePart(path: item.path, confirmed) }
                        done[part.number] = confirmed
                    }
                }
            }
        } else if let id = uploadID {
            try? await client.abortMultipartUpload(key: key, uploadID: id)
            uploadID = nil
        }
        let id: String
        if let uploadID {
            id = uploadID
        } else {
            try await io.run { try index.restartUpload(path: item.path) }
            id = try await client.createMultipartUpload(key: key, contentType: contentType, metadata: metadata)
            try await io.run { try index.startUpload(path: item.path, bytes: size, sha256: "", uploadID: id, partSize: settings.partSize) }
        }
        for number in 1...count where done[number] == nil {
            let length = Self.length(of: number, size: size, partSize: partSize)
            let chunk = try await reader.read(path, offset: Int64(number - 1) * partSize, length: Int(length))
            await rate?.take(bytes: length)
            let etag = try await client.uploadPart(key: key, uploadID: id, number: number, body: chunk.body, sha256: chunk.sha256)
            let part = RecordingIndex.ArchivePart(number: number, bytes: length, etag: etag, sha256: chunk.sha256.hex)
            try await io.run { try index.addArchivePart(path: item.path, part) }
            done[number] = part
        }
        var completed: [S3CompletedPart] = []
        var digests: [[UInt8]] = []
        for number in 1...count {
            guard let part = done[number], let digest = [UInt8](hex: part.sha256), digest.count == 32 else {
                throw FileProblem(description: "part \(number) of \(path) has no digest in the index")
            }
            completed.append(S3CompletedPart(number: number, etag: part.etag, sha256: digest))
            digests.append(digest)
        }
        let refusal: String?
        do {
            _ = try await client.completeMultipartUpload(key: key, uploadID: id, parts: completed)
            refusal = nil
        } catch {
            guard let code = error.code, ["NoSuchUpload", "InvalidPart", "EntityTooSmall"].contains(code) else { throw error }
            refusal = code
        }
        if let refusal {
            try await io.run { try index.restartUpload(path: item.path) }
            throw FileProblem(description: "the bucket refused the parts of \(path) (\(refusal)): it is sent again from the start")
        }
        return digests
    }

    /// HEAD shows the object with this size and checksum (a multipart one's may end in "-N").
    private func confirm(key: String, size: Int64, checksum: String, path: String) async throws {
        guard let head = try await client.headObject(key: key) else {
            throw FileProblem(description: "the bucket does not list \(key) after it answered 200 for it")
        }
        guard head.size == size else {
            throw FileProblem(description: "the bucket holds \(head.size) bytes of \(path), which has \(size)")
        }
        if let theirs = head.checksumSHA256 {
            let bare = theirs.split(separator: "-").first.map(String.init) ?? theirs
            guard bare == checksum else {
                throw FileProblem(description: "the bucket's SHA-256 of \(key) (\(theirs)) is not that of \(path) (\(checksum))")
            }
        }
    }

    private static func length(of part: Int, size: Int64, partSize: Int64) -> Int64 {
        min(partSize, size - Int64(part - 1) * partSize)
    }
}
