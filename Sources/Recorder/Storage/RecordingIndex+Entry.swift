import Capture
import Foundation

/// What the index holds of one file: its kind, its state, and the row itself.
extension RecordingIndex {
    public enum Kind: String, Sendable, CaseIterable {
        case segment, still
        /// An on-demand still (SIGUSR1), under `CAMERA/snapshots/`.
        case snapshot
        /// A daily timelapse video, under `CAMERA/timelapse/`.
        case timelapse

        /// The folder under `ROOT/CAMERA/` that holds this kind.
        var folder: String {
            switch self {
            case .segment: return StorageLayout.videoFolder
            case .still: return StorageLayout.stillsFolder
            case .snapshot: return StorageLayout.snapshotsFolder
            case .timelapse: return StorageLayout.timelapseFolder
            }
        }
    }

    public enum State: String, Sendable, CaseIterable {
        /// The file is being written (`NAME.partial`).
        case writing
        case complete
        /// Writing failed (disk full, I/O error); the file holds what reached the disk.
        case interrupted
        /// Found as `.partial` after a crash, cut back to its last complete fragment, finalized.
        case recovered
        /// The index knew it, but the file is gone.
        case missing
        /// Unplayable leftover moved to `ROOT/.quarantine/`: kept for a person to look at, counted
        /// against its camera's limits and deleted first when room is needed.
        case quarantined
    }

    public struct Entry: Sendable, Equatable {
        public var kind: Kind
        public var camera: String
        /// Relative to the storage root.
        public var path: String
        public var startNanos: Int64
        public var endNanos: Int64
        public var frames: Int
        public var bytes: Int64
        public var codec: String
        public var width: Int
        public var height: Int
        public var state: State
        /// The row's id in the index: what the web API names a file by (never its path). 0 for
        /// an entry not read from the index.
        public var id: Int64 = 0
        /// Here, in the archive's bucket, or both (`[archive]`); read from the index.
        public var location: Location = .local

        public init(
            kind: Kind, camera: String, path: String, startNanos: Int64, endNanos: Int64, frames: Int, bytes: Int64,
            codec: String, width: Int, height: Int, state: State
        ) {
            self.kind = kind
            self.camera = camera
            self.path = path
            self.startNanos = startNanos
            self.endNanos = endNanos
            self.frames = frames
            self.bytes = bytes
            self.codec = codec
            self.width = width
            self.height = height
            self.state = state
        }
    }

    /// The schema this code writes; `PRAGMA user_version` of the file. 0 is a file from before
    /// versioning (the same tables as version 1) or a new one.
}
