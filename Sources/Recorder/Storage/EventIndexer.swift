import Capture
import Foundation
import Glibc
import Plumbing

/// What each recorder event writes to the index: a segment being written or finished, a still,
/// a motion event. Paths are stored relative to the storage root.
struct EventIndexer {
    let index: RecordingIndex
    let layout: StorageLayout
    /// Set while `[archive]` is on: each finished file is queued for the bucket, then this is called.
    var archiveQueued: (@Sendable () -> Void)?

    private func relative(_ path: String) -> String { layout.relative(path) }

    func write(_ event: RecorderEvent) throws {
        switch event {
        case .segmentStarted(let camera, let path, let start):
            try index.put(RecordingIndex.Entry(
                kind: .segment, camera: camera, path: relative(path), startNanos: start, endNanos: start, frames: 0, bytes: 0,
                codec: "", width: 0, height: 0, state: .writing))
        case .segmentFinalized(let camera, let info):
            // The file and its directory were fsynced before this event was sent.
            try index.put(RecordingIndex.Entry(
                kind: .segment, camera: camera, path: relative(info.path), startNanos: info.firstFrameWallNanos,
                endNanos: info.lastFrameWallNanos, frames: info.frameCount, bytes: info.byteCount, codec: info.codec,
                width: info.width, height: info.height, state: info.isIncomplete ? .interrupted : .complete))
            try queueForArchive(relative(info.path), bytes: info.byteCount)
        case .segmentDiscarded(_, let path):
            // Nothing of it reached the disk: no entry is left saying it is being written.
            try index.remove(path: relative(path))
        case .stillSaved(let camera, let path, let shot):
            var st = stat()
            stat(path, &st)
            // A snapshot (no shot instant) is named by when it was taken.
            let at = shot ?? StorageLayout.wallNanos(fromFileName: (path as NSString).lastPathComponent) ?? SystemClocks.wallNanos()
            try index.put(RecordingIndex.Entry(
                kind: shot == nil ? .snapshot : .still, camera: camera, path: relative(path), startNanos: at, endNanos: at, frames: 1,
                bytes: Int64(st.st_size), codec: "mjpeg", width: 0, height: 0, state: .complete))
            try queueForArchive(relative(path), bytes: Int64(st.st_size))
        case .motionStarted(let camera, let start):
            try index.startMotionEvent(camera: camera, startNanos: start)
        case .motionUpdated(let camera, let info):
            try index.updateMotionEvent(
                camera: camera, startNanos: info.startWallNanos, peakPercent: info.peakPercent, picture: info.picturePath.map(relative))
        case .motionEnded(let camera, let info):
            try index.endMotionEvent(
                camera: camera, startNanos: info.startWallNanos, endNanos: info.endWallNanos, peakPercent: info.peakPercent,
                picture: info.picturePath.map(relative))
            if let picture = info.picturePath {
                var st = stat()
                try queueForArchive(relative(picture), bytes: stat(picture, &st) == 0 ? Int64(st.st_size) : 0)
            }
        default:
            break
        }
    }

    /// Queues a finished file for the archive's bucket, when there is one.
    func queueForArchive(_ relativePath: String, bytes: Int64) throws {
        guard let archiveQueued else { return }
        try index.enqueueForArchive(path: relativePath, bytes: bytes, nowNanos: SystemClocks.wallNanos())
        archiveQueued()
    }
}
