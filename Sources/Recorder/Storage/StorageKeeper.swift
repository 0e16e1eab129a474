import Capture
import Foundation
import Glibc
import Logging

/// Keeps a storage root in order while the recorder runs: recovers it at start-up, indexes every
/// file Vigil writes as it is written, enforces retention (age and bytes per camera, every 30 s)
/// and the free-space floor (after every file it indexes, and every 30 s for what others write,
/// sweeping the oldest recordings when it is crossed, which is also how a full disk is cleared so
/// recording resumes by itself). All of its work runs on its own I/O thread (`io`): never on a
/// capture thread or on Swift's cooperative pool. `StorageService` drives it in `vigil run`.
/// @unchecked: its mutable state (policy, sweep and clock bookkeeping) is touched only on `io`.
public final class StorageKeeper: @unchecked Sendable {
    public let root: String
    public let index: RecordingIndex
    public let recovery: RecoverySummary
    private var policy: RetentionPolicy
    private let events: RecorderEvents
    /// The keeper's thread: SQLite, statvfs, unlink. Everything below runs there.
    let io = BlockingIO("vigil.storage")
    private let logger = Logger(label: "vigil.storage")
    private var subscription: UUID?
    private var lastNothingToFree: Int64?
    private var diskLowReported = false
    /// The first estimate of days left comes after ten minutes of recording, then hourly.
    private var nextDaysReport = SystemClocks.monotonicNanos() + 600_000_000_000
    /// Wall clock minus time since boot at the last look: a change is a clock step.
    private var clockOffset: Int64?
    /// The clock was seen to jump forward in this run, or the first retention pass found the
    /// newest recording over a day behind the clock: deleting most of a camera's recordings by
    /// age at once is then refused.
    private var clockSuspect = false
    private var firstRetentionPass = true
    private var massDeletionReported: Set<String> = []
    /// Index writes that failed (the disk full with nothing left to delete, the index locked by
    /// another process), oldest first: tried again, in order, before each new event and every
    /// 30 s until they succeed, so a finished segment is not left listed as being written, nor
    /// a deleted file as there. A new event waits behind them, so no older write lands last.
    private var pendingWrites: [PendingWrite] = []

    private struct PendingWrite {
        let what: String
        let write: () throws -> Void
        var reported = false
    }

    /// Opens the index under `root` and recovers what an interrupted run left behind. The files
    /// are the truth, so a bad index never stops recording: a damaged one is moved aside
    /// (`vigil-index.sqlite3.corrupt-STAMP`) and rebuilt from the files; one that cannot be
    /// written (read-only, disk full, newer schema) is left alone and an index in memory, built
    /// from the files, serves this run. Either way a log line says what happened.
    public static func open(root: String, policy: RetentionPolicy, events: RecorderEvents) throws -> StorageKeeper {
        let logger = Logger(label: "vigil.storage")
        let layout = StorageLayout(root: root)
        let path = layout.indexPath
        func openFile() throws -> (RecordingIndex, RecoverySummary) {
            let index = try RecordingIndex(root: root)
            try index.checkIntegrity()
            let recovery = try StorageRecovery.run(root: root, index: index, logger: logger)
            let unfinished = try index.closeUnfinishedMotionEvents()
            if unfinished > 0 {
                logger.notice("\(unfinished) motion event(s) were under way when Vigil last stopped without finishing them: listed as ending where they began")
            }
            return (index, recovery)
        }
        var opened: (RecordingIndex, RecoverySummary)?
        do {
            opened = try openFile()
        } catch let error as RecorderError where error.isDamagedIndex {
            let aside = layout.damagedIndexPath(stamp: StorageLayout.utcStamp(SystemClocks.wallNanos()).stamp)
            if rename(path, aside) == 0 {
                _ = rename(layout.indexWALPath, "\(aside)-wal")
                unlink(layout.indexSharedMemoryPath)
                do {
                    opened = try openFile()
                    logger.error("\(error.indexMessage ?? "\(error)"); moved it to \(aside) and rebuilt the index from the recordings (\(opened!.1)); nothing was lost")
                } catch {
                    logger.error("\(path) was damaged and moved to \(aside), but a new index cannot be made there either: \(error)")
                }
            } else {
                logger.error("\(error.indexMessage ?? "\(error)"), and it cannot be moved aside: \(String(cString: strerror(errno)))")
            }
        } catch let error as RecorderError where error.isDiskFull {
            // Room is made from the recordings (listed by an index in memory) and the file tried again.
            let inMemory = try RecordingIndex.inMemory(root: root)
            let keeper = StorageKeeper(
                root: root, index: inMemory, recovery: try StorageRecovery.run(root: root, index: inMemory, logger: logger),
                policy: policy, events: events)
            keeper.checkFreeSpace(SystemClocks.monotonicNanos(), emergency: true)
            do {
                opened = try openFile()
                logger.warning("the disk under \(root) was full, so the index \(path) could not be opened; room was made by deleting the oldest recordings and it opened")
            } catch {
                logger.error("the index \(path) cannot be used (\((error as? RecorderError)?.indexMessage ?? "\(error)")), even after making room on the disk")
            }
        } catch {
            logger.error("the index \(path) cannot be used (\((error as? RecorderError)?.indexMessage ?? "\(error)"))")
        }
        if let (index, recovery) = opened {
            return StorageKeeper(root: root, index: index, recovery: recovery, policy: policy, events: events)
        }
        let index = try RecordingIndex.inMemory(root: root)
        let recovery = try StorageRecovery.run(root: root, index: index, logger: logger)
        let message = "recording goes on without the index file \(path): an index in memory, built from the recordings, serves this run "
            + "(\(recovery)). Fix the file or its disk (or move it aside) and restart Vigil to have it rebuilt there"
        logger.error("\(message)")
        return StorageKeeper(root: root, index: index, recovery: recovery, policy: policy, events: events)
    }

    private init(root: String, index: RecordingIndex, recovery: RecoverySummary, policy: RetentionPolicy, events: RecorderEvents) {
        self.root = root
        self.index = index
        self.recovery = recovery
        self.policy = policy
        self.events = events
    }

    /// Starts indexing events. Events are handed to the keeper's thread as they are emitted, so
    /// `stop()` after the cameras have stopped indexes all of them. Retention and the periodic
    /// look at free space are `tick()`, which the storage service calls every 30 s.
    public func start() {
        subscription = events.subscribe { [self] event in io.enqueue { self.record(event) } }
    }

    /// Stops, after every event emitted so far has been indexed.
    public func stop() async {
        subscription.map(events.unsubscribe)
        subscription = nil
        await flush()
    }

    /// Waits until what was handed over is done (every event emitted so far indexed, a sweep finished).
    public func flush() async {
        await io.run {}
    }

    /// A new retention policy (configuration reload).
    public func update(_ policy: RetentionPolicy) { io.enqueue { self.policy = policy } }

    /// Indexes a file written outside the capture sessions (a daily timelapse video).
    func add(_ entry: RecordingIndex.Entry) {
        io.enqueue {
            do { try self.index.put(entry) } catch { self.logger.error("could not index \(entry.path): \(error)") }
        }
    }

    // MARK: - Indexing

    private func relative(_ path: String) -> String { StorageLayout(root: root).relative(path) }

    /// Indexes an event, after the writes still waiting (`pendingWrites`).
    private func record(_ event: RecorderEvent) {
        defer {
            // Vigil's own writes are what fills the disk: the floor is looked at after each one.
            switch event {
            case .segmentStarted, .segmentFinalized, .stillSaved: checkFreeSpace(SystemClocks.monotonicNanos())
            default: break
            }
        }
        pendingWrites.append(PendingWrite(what: "index \(event)") { try self.addToIndex(event) })
        writePending()
    }

    /// Writes what waits for the index, in order, up to the first that still fails. When the
    /// index finds the disk full, room is made (as after ENOSPC from a recording) and the write
    /// tried once more, so a recording made just before the disk filled is not left out.
    private func writePending() {
        while let next = pendingWrites.first {
            do {
                do {
                    try next.write()
                } catch let error as RecorderError where error.isDiskFull {
                    checkFreeSpace(SystemClocks.monotonicNanos(), emergency: true)
                    try next.write()
                }
                pendingWrites.removeFirst()
                if next.reported { logger.notice("could \(next.what) at last") }
            } catch {
                if !next.reported {
                    pendingWrites[0].reported = true
                    logger.error("could not \(next.what) (tried again until it can be): \(error)")
                }
                return
            }
        }
    }

    private func addToIndex(_ event: RecorderEvent) throws {
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
        case .motionStarted(let camera, let start):
            try index.startMotionEvent(camera: camera, startNanos: start)
        case .motionEnded(let camera, let info):
            try index.endMotionEvent(
                camera: camera, startNanos: info.startWallNanos, endNanos: info.endWallNanos, peakPercent: info.peakPercent,
                picture: info.picturePath.map(relative))
        case .error(_, _, let code?) where code.isDiskFull:
            // A write hit ENOSPC: make room now, even if the floor was set to nothing.
            checkFreeSpace(SystemClocks.monotonicNanos(), emergency: true)
        default:
            break
        }
    }

    // MARK: - Retention and free space

    /// Every 30 s (on the keeper's thread): a clock step, the free-space floor (others write to
    /// the disk too), retention, and now and then how many days the disk holds.
    func tick() {
        let now = SystemClocks.monotonicNanos()
        noteClock(wall: SystemClocks.wallNanos(), sinceBoot: Self.nanosSinceBoot())
        writePending()
        checkFreeSpace(now)
        enforceRetention(nowWall: SystemClocks.wallNanos())
        if now >= nextDaysReport {
            nextDaysReport = now + 3_600_000_000_000
            if let days = daysOfStorageLeft() {
                logger.notice("at the recent rate the disk under \(root) holds about \(String(format: "%.1f", days)) days of recordings")
            }
        }
    }

    /// A wall-clock step of more than a minute (NTP setting the clock of a board without a
    /// battery, someone running `date`) is noticed here, against the time since boot (which,
    /// unlike the monotonic clock, also runs during a suspend, so a resume is no step). After a
    /// forward step, what was recorded since boot before it has names and index times from the
    /// wrong clock: its index times are moved on by the step so it is judged by when it was
    /// really recorded (its files keep their names, and still sort and play).
    func noteClock(wall: Int64, sinceBoot: Int64) {
        let offset = wall - sinceBoot
        defer { clockOffset = offset }
        guard let previous = clockOffset, abs(offset - previous) > 60_000_000_000 else { return }
        let step = offset - previous
        let before = sinceBoot + previous
        guard step > 0 else {
            logger.warning("the wall clock went back by \(Self.span(-step)); recordings named from now on sort before the ones just made")
            return
        }
        clockSuspect = true
        do {
            // [boot, before] is what the wrong clock stamped.
            let moved = try index.shiftTimes(by: step, endingFrom: before - sinceBoot, to: before)
            let message = "the wall clock jumped forward by \(Self.span(step)); \(moved) recording(s) made before that are judged "
                + "by when they were really made, so retention does not take them for old"
            logger.warning("\(message)")
        } catch {
            logger.error("the wall clock jumped forward by \(Self.span(step)), and the index could not be corrected: \(error)")
        }
    }

    static func nanosSinceBoot() -> Int64 {
        var ts = timespec()
        clock_gettime(CLOCK_BOOTTIME, &ts)
        return Int64(ts.tv_sec) * 1_000_000_000 + Int64(ts.tv_nsec)
    }

    static func span(_ nanos: Int64) -> String {
        let s = Double(nanos) / 1e9
        return s < 7200 ? String(format: "%.0f min", s / 60) : s < 172_800 ? String(format: "%.1f hours", s / 3600) : String(format: "%.0f days", s / 86400)
    }

    /// Deletes what is older or more than each camera's limits allow. Ages are judged against
    /// the newest recording when the clock is ahead of it, so a clock that jumped forward ages
    /// nothing; quarantined files count against the limits and go first.
    func enforceRetention(nowWall: Int64) {
        do {
            let newest = try index.newestEnd()
            let reference = min(nowWall, newest ?? nowWall)
            if firstRetentionPass {
                firstRetentionPass = false
                if let newest, nowWall - newest > 86_400_000_000_000 { clockSuspect = true }
            }
            for camera in try index.cameras() {
                let limits = policy.limits(for: camera)
                for (kinds, limit, label) in [(Self.videoKinds, limits.videos, "videos"), (Self.stillKinds, limits.stills, "stills")] {
                    let entries = try index.entries(camera: camera, kinds: kinds, states: Self.deletable)
                    var doomed: [(RecordingIndex.Entry, String)] = []
                    if let days = limit.maxAgeDays {
                        let cutoff = reference - Int64(days * 86_400 * 1e9)
                        let old = entries.filter { $0.endNanos < cutoff }
                        if clockSuspect && old.count > 1 && old.count * 2 > entries.count {
                            let key = "\(camera) \(label)"
                            if massDeletionReported.insert(key).inserted {
                                let behind = Self.span(max(nowWall - (newest ?? nowWall), 0))
                                let message = "retention: \(old.count) of the \(entries.count) \(label) of camera \(camera) look older than "
                                    + "\(DeviceFormat.rate(days)) days after a clock jump (the newest recording was \(behind) behind the clock): "
                                    + "not deleting them by age. If the clock is right, restart Vigil and they are deleted; "
                                    + "the free-space floor still makes room"
                                logger.error("\(message)")
                            }
                        } else {
                            doomed += old.map { ($0, "older than \(DeviceFormat.rate(days)) days") }
                        }
                    }
                    if let maxBytes = limit.maxBytes {
                        // Newest kept first, quarantined files last, so they go first.
                        let keptFirst = entries.filter { $0.state != .quarantined }.reversed() + entries.filter { $0.state == .quarantined }.reversed()
                        var total: Int64 = 0
                        for entry in keptFirst {
                            total += entry.bytes
                            if total > maxBytes && !doomed.contains(where: { $0.0.path == entry.path }) {
                                doomed.append((entry, "camera over its \(maxBytes) bytes"))
                            }
                        }
                    }
                    for (entry, reason) in doomed { delete(entry, reason: reason) }
                }
                // Motion events go with the videos they point at, by age.
                if let days = limits.videos.maxAgeDays, !clockSuspect {
                    let pictures = try index.removeMotionEvents(camera: camera, endingBefore: reference - Int64(days * 86_400 * 1e9))
                    for picture in pictures { unlink(StorageLayout(root: root).absolute(picture)) }
                }
            }
        } catch {
            logger.error("retention: \(error)")
        }
    }

    /// Kinds under a camera's video limits, and under its stills limits (the timelapse product).
    static let videoKinds: [RecordingIndex.Kind] = [.segment]
    static let stillKinds: [RecordingIndex.Kind] = [.still, .snapshot, .timelapse]

    /// Below the free-space floor: delete the oldest files (quarantined leftovers first, then
    /// videos of every camera, stills only when no video is left) until the floor is met again.
    func checkFreeSpace(_ now: Int64, emergency: Bool = false) {
        guard let space = Self.space(root) else { return }
        var free = space.free
        let total = space.total
        // After ENOSPC, at least 2 % of the disk is made free so the next segment fits.
        let floor = max(policy.freeFloor(totalBytes: total), emergency ? total / 50 : 0)
        guard free < floor else {
            if emergency { return }
            diskLowReported = false
            lastNothingToFree = nil
            return
        }
        if !diskLowReported {
            diskLowReported = true
            events.emit(.diskLow(path: root, freeBytes: free))
        }
        do {
            let order = [try index.entries(kinds: nil, states: [.quarantined]), try index.entries(kinds: Self.videoKinds, states: Self.finished),
                         try index.entries(kinds: Self.stillKinds, states: Self.finished)]
            for entries in order where free < floor {
                for entry in entries where free < floor {
                    delete(entry, reason: "free space below \(floor / 1_048_576) MiB")
                    (free, _) = Self.space(root) ?? (free + entry.bytes, total)
                }
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

    /// Never a file being written: only finished recordings, and quarantined leftovers.
    static let finished: [RecordingIndex.State] = [.complete, .interrupted, .recovered]
    static let deletable = finished + [.quarantined]

    private func delete(_ entry: RecordingIndex.Entry, reason: String) {
        let path = StorageLayout(root: root).absolute(entry.path)
        let gone = unlink(path) == 0
        guard gone || errno == ENOENT else {
            logger.error("could not delete \(path): \(String(cString: strerror(errno)))")
            return
        }
        do {
            try index.remove(path: entry.path)
        } catch {
            let relative = entry.path
            pendingWrites.append(PendingWrite(what: "remove \(relative) (deleted) from the index", write: { try self.index.remove(path: relative) }, reported: true))
            logger.warning("deleted \(path), but could not remove it from the index (tried again until it can be): \(error)")
        }
        // A file already gone (deleted by hand, or by a sweep whose index write failed) is no news.
        guard gone else { return }
        logger.notice("deleted \(path): \(reason)")
        events.emit(.recordingDeleted(camera: entry.camera, path: path, reason: reason))
    }

    static func space(_ path: String) -> (free: Int64, total: Int64)? {
        var st = statvfs()
        guard statvfs(path, &st) == 0 else { return nil }
        return (Int64(st.f_bavail) * Int64(st.f_frsize), Int64(st.f_blocks) * Int64(st.f_frsize))
    }

    /// How many days of recordings this disk holds at the rate of the last day: the bytes
    /// recordings use now plus what is free above the floor, divided by bytes per day. Nil
    /// before there is a rate to go by.
    public func daysOfStorageLeft(nowWall: Int64 = SystemClocks.wallNanos()) -> Double? {
        guard let (free, total) = Self.space(root),
              let recent = try? index.bytesRecorded(sinceNanos: nowWall - 86_400_000_000_000),
              let first = recent.firstStart, recent.bytes > 0 else { return nil }
        let span = max(Double(nowWall - first) / 86_400e9, 1.0 / 1440)
        let perDay = Double(recent.bytes) / span
        let stored = (try? index.entries(states: Self.deletable).reduce(Int64(0)) { $0 + $1.bytes }) ?? 0
        return Double(stored + max(free - policy.freeFloor(totalBytes: total), 0)) / perDay
    }
}
