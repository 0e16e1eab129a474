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

    /// An archived recording loses only its local copy: its entry stays, and it plays from the
    /// bucket. One only in the bucket is not touched here (`max_age_days` deletes it there).
    func delete(_ entry: RecordingIndex.Entry, reason: String) {
        guard entry.location != .archive else { return }
        let path = layout.absolute(entry.path)
        let gone = unlink(path) == 0
        guard gone || errno == ENOENT else {
            logger.error("could not delete \(path): \(String(cString: strerror(errno)))")
            return
        }
        let relative = entry.path
        let archived = entry.location == .both
        do {
            if archived {
                try index.markLocalCopyGone(path: relative)
            } else {
                // Not archived yet: it leaves the archive's queue too (an upload under way finds it gone and stops).
                try index.transaction {
                    try index.remove(path: relative)
                    try index.removeFromArchive(path: relative)
                }
            }
        } catch {
            pending.append("remove \(relative) (deleted) from the index", reported: true) { [index] in
                if archived { try index.markLocalCopyGone(path: relative) } else { try index.remove(path: relative) }
            }
            logger.warning("deleted \(path), but could not update the index (tried again until it can be): \(error)")
        }
        // A file already gone (deleted by hand, or by a sweep whose index write failed) is no news.
        guard gone else { return }
        let why = archived ? reason + "; the archive keeps it" : reason
        logger.notice("deleted \(path): \(why)")
        events.emit(.recordingDeleted(camera: entry.camera, path: path, reason: why))
    }
}
