import CheckedMath
import Plumbing
import S3
import Capture
import Foundation
import Glibc
import Recorder

/// `vigil archive rebuild-index`: lists the bucket under the prefix and puts back into the index
/// every archived recording and event picture it lacks, from each object's `x-amz-meta-vigil-*`
/// headers (`ArchiveMetadata`). A lost disk thus loses nothing that was archived: the recordings
/// play from the bucket again. Idempotent: what the index lists is left as it is.
public struct ArchiveRebuild: Sendable {
    let client: S3Client
    let settings: ArchiveSettings
    let index: RecordingIndex
    let root: String
    let io: BlockingIO

    public struct Summary: Sendable, CustomStringConvertible {
        public var recordings = 0
        public var events = 0
        public var bytes: Int64 = 0
        public var cameras: Set<String> = []
        /// Objects under the prefix that are not Vigil's (no metadata) or already listed.
        public var skipped = 0
        public var alreadyListed = 0

        public var description: String {
            "restored \(recordings) recording(s) and \(events) event picture(s) (\(String(format: "%.2f", Double(bytes) / 1_073_741_824)) GiB) of \(cameras.count) camera(s); "
                + "\(alreadyListed) already listed, \(skipped) object(s) skipped (not Vigil's)"
        }
    }

    /// HEAD requests at once (each object's metadata is one request).
    static let parallelHeads = 8

    func run(progress: @Sendable (_ listed: Int) -> Void) async throws -> Summary {
        var summary = Summary()
        var token: String?
        var listed = 0
        // Listed by the prefix without its slash (keys outside "PREFIX/" are skipped below): moto
        // with signatures checked refuses a "/" in a listing's query, boto3's too.
        let prefix = settings.prefix
        repeat {
            let page = try await client.listObjects(prefix: prefix, continuationToken: token)
            token = page.next
            listed += page.objects.count
            var wanted: [(key: String, path: String, size: Int64)] = []
            for object in page.objects {
                guard let path = settings.path(for: object.key), ArchiveSettings.isStoragePath(path) else {
                    summary.skipped += 1
                    continue
                }
                wanted.append((object.key, path, object.size))
            }
            let candidates = wanted
            let known = try await io.run { [index] in
                Set(try candidates.filter { try index.archiveItem(path: $0.path)?.state == .archived }.map(\.path))
            }
            summary.alreadyListed += known.count
            let todo = wanted.filter { !known.contains($0.path) }
            for start in stride(from: 0, to: todo.count, by: Self.parallelHeads) {
                let batch = Array(todo[start..<min(start + Self.parallelHeads, todo.count)])
                let client = self.client
                let heads = try await withThrowingTaskGroup(of: (Int, S3ObjectHead?).self) { group in
                    for (n, object) in batch.enumerated() {
                        group.addTask { (n, try await client.headObject(key: object.key)) }
                    }
                    var heads = [S3ObjectHead?](repeating: nil, count: batch.count)
                    for try await (n, head) in group { heads[n] = head }
                    return heads
                }
                for (object, head) in zip(batch, heads) {
                    guard let head, let restored = ArchiveMetadata.restore(head.metadata, path: object.path, bytes: head.size) else {
                        summary.skipped += 1
                        continue
                    }
                    let local = StorageLayout(root: root).absolute(object.path)
                    try await io.run { [index] in
                        var st = stat()
                        let here = stat(local, &st) == 0 && Int64(st.st_size) == head.size
                        try index.transaction {
                            switch restored {
                            case .recording(let entry):
                                if try index.entry(path: entry.path) == nil { try index.put(entry) }
                            case .event(let camera, let start, let end, let peak):
                                try index.restoreMotionEvent(camera: camera, startNanos: start, endNanos: end, peakPercent: peak, picture: object.path)
                            }
                            try index.putArchived(path: object.path, bytes: head.size, sha256: nil, local: here, nowNanos: SystemClocks.wallNanos())
                        }
                    }
                    switch restored {
                    case .recording(let entry):
                        summary.recordings += 1
                        summary.cameras.insert(entry.camera)
                    case .event(let camera, _, _, _):
                        summary.events += 1
                        summary.cameras.insert(camera)
                    }
                    summary.bytes = summary.bytes.saturatingAdding(head.size)
                }
            }
            progress(listed)
        } while token != nil
        return summary
    }
}
