import Capture
import Glibc
import Logging

/// Deletes one recording for retention or the free-space floor: the file, then its index entry
/// (queued in `pending` when the index cannot take it now), then an event saying why.
struct RecordingDeleter {
    let layout: StorageLayout
    let index: RecordingIndex
    let events: RecorderEvents
    let pending: PendingIndexWrites
    let logger: Logger

    func delete(_ entry: RecordingIndex.Entry, reason: String) {
        let path = layout.absolute(entry.path)
        let gone = unlink(path) == 0
        guard gone || errno == ENOENT else {
            logger.error("could not delete \(path): \(String(cString: strerror(errno)))")
            return
        }
        do {
            try index.remove(path: entry.path)
        } catch {
            let relative = entry.path
            pending.append("remove \(relative) (deleted) from the index", reported: true) { [index] in try index.remove(path: relative) }
            logger.warning("deleted \(path), but could not remove it from the index (tried again until it can be): \(error)")
        }
        // A file already gone (deleted by hand, or by a sweep whose index write failed) is no news.
        guard gone else { return }
        logger.notice("deleted \(path): \(reason)")
        events.emit(.recordingDeleted(camera: entry.camera, path: path, reason: reason))
    }
}
