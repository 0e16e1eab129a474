import Capture
import CheckedMath
import Glibc
import Logging

/// Deletes what is older or more than each camera's limits allow (every 30 s). Ages are judged
/// against the newest recording when the clock is ahead of it, so a clock that jumped forward
/// ages nothing; quarantined files count against the limits and go first.
/// Used only on `StorageKeeper.io`.
final class RetentionEnforcer {
    private let index: RecordingIndex
    private let layout: StorageLayout
    private let deleter: RecordingDeleter
    private let logger: Logger
    /// The clock was seen to jump forward in this run (`ClockStepWatch`), or the first pass found
    /// the newest recording over a day behind the clock: deleting most of a camera's recordings by
    /// age at once is then refused.
    var clockSuspect = false
    private var firstPass = true
    private var massDeletionReported: Set<String> = []

    init(index: RecordingIndex, layout: StorageLayout, deleter: RecordingDeleter, logger: Logger) {
        self.index = index
        self.layout = layout
        self.deleter = deleter
        self.logger = logger
    }

    func enforce(_ policy: RetentionPolicy, nowWall: Int64) {
        do {
            let newest = try index.newestEnd()
            let reference = min(nowWall, newest ?? nowWall)
            if firstPass {
                firstPass = false
                if let newest, nowWall - newest > 86_400_000_000_000 { clockSuspect = true }
            }
            for camera in try index.cameras() {
                let limits = policy.limits(for: camera)
                for (kinds, limit, label) in [(StorageKeeper.videoKinds, limits.videos, "videos"), (StorageKeeper.stillKinds, limits.stills, "stills")] {
                    // Local limits count local copies: one only in the archive's bucket takes no room here.
                    let entries = try index.entries(camera: camera, kinds: kinds, states: StorageKeeper.deletable).filter { $0.location != .archive }
                    var doomed: [(RecordingIndex.Entry, String)] = []
                    if let days = limit.maxAgeDays {
                        doomed += tooOld(entries, days: days, reference: reference, camera: camera, label: label, nowWall: nowWall, newest: newest)
                    }
                    if let maxBytes = limit.maxBytes {
                        doomed += overBytes(entries, maxBytes: maxBytes, except: doomed.map(\.0.path))
                    }
                    for (entry, reason) in doomed { deleter.delete(entry, reason: reason) }
                }
                // Motion events go with the videos they point at, by age.
                if let days = limits.videos.maxAgeDays, !clockSuspect {
                    let pictures = try index.removeMotionEvents(camera: camera, endingBefore: reference - Int64(days * 86_400 * 1e9))
                    for picture in pictures { unlink(layout.absolute(picture)) }
                }
            }
        } catch {
            logger.error("retention: \(error)")
        }
    }

    /// Entries older than `days` before `reference`, unless after a clock jump they are most of
    /// the camera's (then said once, and kept).
    private func tooOld(
        _ entries: [RecordingIndex.Entry], days: Double, reference: Int64, camera: String, label: String, nowWall: Int64, newest: Int64?
    ) -> [(RecordingIndex.Entry, String)] {
        let cutoff = reference - Int64(days * 86_400 * 1e9)
        let old = entries.filter { $0.endNanos < cutoff }
        guard clockSuspect && old.count > 1 && old.count * 2 > entries.count else {
            return old.map { ($0, "older than \(DeviceFormat.rate(days)) days") }
        }
        let key = "\(camera) \(label)"
        if massDeletionReported.insert(key).inserted {
            let behind = describeSpan(max(nowWall - (newest ?? nowWall), 0))
            let message = "retention: \(old.count) of the \(entries.count) \(label) of camera \(camera) look older than "
                + "\(DeviceFormat.rate(days)) days after a clock jump (the newest recording was \(behind) behind the clock): "
                + "not deleting them by age. If the clock is right, restart Vigil and they are deleted; "
                + "the free-space floor still makes room"
            logger.error("\(message)")
        }
        return []
    }

    /// Entries beyond `maxBytes`, newest kept first and quarantined files last, so they go first.
    private func overBytes(_ entries: [RecordingIndex.Entry], maxBytes: Int64, except doomed: [String]) -> [(RecordingIndex.Entry, String)] {
        let keptFirst = entries.filter { $0.state != .quarantined }.reversed() + entries.filter { $0.state == .quarantined }.reversed()
        var total: Int64 = 0
        var over: [(RecordingIndex.Entry, String)] = []
        for entry in keptFirst {
            total = total.saturatingAdding(max(0, entry.bytes))
            if total > maxBytes && !doomed.contains(entry.path) {
                over.append((entry, "camera over its \(maxBytes) bytes"))
            }
        }
        return over
    }
}
