import Plumbing
import Recorder
import S3

/// `vigil archive adopt`: a node that archived alone before it joined a cluster has those files
/// under `PREFIX/PATH`; since, its keys are `PREFIX/NODE/PATH` (`ArchiveSettings.placed`). Reads
/// fall back to the old key, but `rebuild-index` after a lost disk, and other nodes reading the
/// node's folder when it is down, look in the folder only. This moves each file the index knows
/// as archived from its old key into the folder: copy (metadata and all), check the copy's size,
/// then delete the old key. Resumable: a key already moved is only deleted from its old place,
/// and a second run finds nothing left to do.
public struct ArchiveAdopt: Sendable {
    let client: S3Client
    let settings: ArchiveSettings
    let index: RecordingIndex
    let io: BlockingIO

    public struct Summary: Sendable, CustomStringConvertible {
        public var moved = 0
        /// Already in the folder from an earlier run; the old key was deleted now.
        public var finished = 0
        public var bytes: Int64 = 0
        /// Archived files with no key from before the cluster (archived since, or adopted).
        public var inPlace = 0

        public var description: String {
            "moved \(moved) file(s) (\(String(format: "%.2f", Double(bytes) / 1_073_741_824)) GiB) into the node's folder"
                + (finished == 0 ? "" : ", finished \(finished) an earlier run had copied") + "; \(inPlace) were there already"
        }
    }

    /// Files moved at once (each a HEAD, a copy, a HEAD and a DELETE).
    static let parallel = 8

    public init(client: S3Client, settings: ArchiveSettings, index: RecordingIndex, io: BlockingIO) {
        self.client = client
        self.settings = settings
        self.index = index
        self.io = io
    }

    /// Moves every archived file of the index; `progress` is told after each batch.
    public func run(progress: @Sendable (_ done: Int, _ total: Int) -> Void) async throws -> Summary {
        let paths = try await io.run { [index] in try index.archiveItems().filter { $0.state == .archived }.map(\.path) }
        var summary = Summary()
        var done = 0
        for batch in stride(from: 0, to: paths.count, by: Self.parallel).map({ Array(paths[$0..<min($0 + Self.parallel, paths.count)]) }) {
            let outcomes = try await withThrowingTaskGroup(of: Outcome.self) { group in
                for path in batch { group.addTask { try await adopt(path) } }
                var all: [Outcome] = []
                for try await outcome in group { all.append(outcome) }
                return all
            }
            for outcome in outcomes {
                switch outcome {
                case .moved(let bytes): summary.moved += 1; summary.bytes = summary.bytes.addingReportingOverflow(bytes).partialValue
                case .finished: summary.finished += 1
                case .inPlace: summary.inPlace += 1
                }
            }
            done += batch.count
            progress(done, paths.count)
        }
        return summary
    }

    enum Outcome: Sendable { case moved(Int64), finished, inPlace }

    struct CopyMismatch: Error, CustomStringConvertible {
        let description: String
    }

    /// One file: where its keys are, and what it takes to leave it in the folder alone.
    func adopt(_ path: String) async throws -> Outcome {
        guard ArchiveSettings.isStoragePath(path), let old = settings.keyBeforeCluster(for: path) else { return .inPlace }
        let new = settings.key(for: path)
        guard let before = try await client.headObject(key: old) else { return .inPlace }
        if let there = try await client.headObject(key: new), there.size == before.size {
            try await client.deleteObject(key: old)
            return .finished
        }
        try await client.copyObject(from: old, to: new)
        guard let copy = try await client.headObject(key: new), copy.size == before.size else {
            throw CopyMismatch(description: "the copy of \(old) at \(new) is not \(before.size) bytes: the old key is kept")
        }
        try await client.deleteObject(key: old)
        return .moved(before.size)
    }
}
