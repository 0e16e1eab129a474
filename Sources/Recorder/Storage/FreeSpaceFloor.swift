import Capture
import Glibc
import Logging

/// Keeps the free-space floor: below it, deletes the oldest files (quarantined leftovers first,
/// then local copies the archive holds, then videos of every camera, stills only when no video is left) until it is met again. Looked
/// at after each file Vigil writes and every 30 s; after ENOSPC it is also how a full disk is
/// cleared so recording resumes by itself. Used only on `StorageKeeper.io`.
final class FreeSpaceFloor {
    /// Deletes, and holds what the sweep reads and says: the index, the events, the log.
    private let deleter: RecordingDeleter
    private var root: String { deleter.layout.root }
    private var index: RecordingIndex { deleter.index }
    private var events: RecorderEvents { deleter.events }
    private var logger: Logger { deleter.logger }
    private var lastNothingToFree: Int64?
    private var diskLowReported = false
    /// `[archive]` is on: deleting a recording the bucket does not hold yet is said in the log.
    var archiving = false

    init(deleter: RecordingDeleter) { self.deleter = deleter }

    /// Free and total bytes of the file system holding `path`, as an unprivileged writer sees them.
    static func space(_ path: String) -> (free: Int64, total: Int64)? { StorageRoom.space(path) }

    /// Deletes the oldest recordings while the free room is below the floor; `emergency` (after
    /// ENOSPC) raises it to the room a paused writer resumes with, and `wanted` to that many bytes.
    func check(_ policy: RetentionPolicy, now: Int64, emergency: Bool, wanted: Int64 = 0) {
        guard let space = Self.space(root) else { return }
        var free = space.free
        let total = space.total
        // After ENOSPC, at least 2 % of the disk is made free so the next segment fits.
        let floor = max(policy.freeFloor(totalBytes: total), emergency ? StorageRoom.roomToResume(totalBytes: total) : 0, wanted)
        guard free < floor else {
            // (Not the "nothing left to delete" line's clock: with no floor, a disk that is full
            // again a second later is above it in between, and the line came every second.)
            if !emergency { diskLowReported = false }
            return
        }
        if !diskLowReported {
            diskLowReported = true
            events.emit(.diskLow(path: root, freeBytes: free))
        }
        do {
            let videos = try index.entries(kinds: StorageKeeper.videoKinds, states: StorageKeeper.finished)
            let stills = try index.entries(kinds: StorageKeeper.stillKinds, states: StorageKeeper.finished)
            // Local copies the archive's bucket holds go before anything that exists only here.
            let order = [try index.entries(kinds: nil, states: [.quarantined]), videos.filter { $0.location == .both },
                         stills.filter { $0.location == .both }, videos.filter { $0.location == .local }, stills.filter { $0.location == .local }]
            var notArchived: [String] = []
            for entries in order where free < floor {
                for entry in entries where free < floor {
                    if archiving && entry.location == .local && entry.state != .quarantined { notArchived.append(entry.path) }
                    deleter.delete(entry, reason: "free space below \(floor / 1_048_576) MiB")
                    (free, _) = Self.space(root) ?? (free + entry.bytes, total)
                }
            }
            if let first = notArchived.first {
                let backlog = try? index.archiveBacklog()
                logger.warning("deleting \(notArchived.count) recording(s) not yet archived to make room (the archive queue is behind by \(backlog?.files ?? 0) file(s), \((backlog?.bytes ?? 0) / 1_048_576) MiB): \(first)\(notArchived.count > 1 ? " …" : "")")
            }
        } catch {
            logger.error("free-space sweep: \(error)")
        }
        // The index's write-ahead log gives its space back too, now that there is room to copy it.
        do { try index.truncateJournal() } catch { logger.warning("free-space sweep: the index journal could not be emptied: \(error)") }
        if free < floor, lastNothingToFree.map({ now - $0 >= 30_000_000_000 }) ?? true {
            lastNothingToFree = now
            let message = "the disk under \(root) is full and no finished recording is left to delete (\(free / 1_048_576) MiB free): "
                + "free space or give Vigil another disk; recording resumes by itself as soon as there is room"
            logger.error("\(message)")
            events.emit(.error(camera: "storage", message: message))
        }
    }
}
