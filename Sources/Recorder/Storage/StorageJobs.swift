import Capture
import Logging
import Plumbing

/// The storage keeper's jobs, each its own type: indexing every file Vigil writes as it is
/// written (`EventIndexer`, with `PendingIndexWrites` for writes the index refused), retention by
/// age and bytes per camera every 30 s (`RetentionEnforcer`), the free-space floor after every
/// file it indexes and every 30 s for what others write (`FreeSpaceFloor`, also how a full disk
/// is cleared so recording resumes by itself), clock steps (`ClockStepWatch`) and the days-left
/// estimate (`StorageForecast`). This type decides when each runs; `StorageKeeper` runs it on its thread.
final class StorageJobs {
    var policy: RetentionPolicy
    private let logger: Logger
    private let pendingWrites: PendingIndexWrites
    private var indexer: EventIndexer
    private let retention: RetentionEnforcer
    private let floor: FreeSpaceFloor
    private let deleter: RecordingDeleter
    /// Shared with the recordings' writers under the root, which it holds back while the index needs the room.
    private let room: StorageRoom
    private let reserve: IndexReserve
    /// How many times `StorageRoom.roomToResume` the held writers are let go with: doubled for
    /// every segment that kept no frame (the room it was let into could not take one, so the
    /// same room would only take another header), back to 1 once a segment keeps frames.
    private var resumeFactor: Int64 = 1
    /// `[archive] keep_local_days` in nanoseconds, while archiving; nil: local copies stay for retention.
    private var keepLocalNanos: Int64?
    private var clock = ClockStepWatch()
    private var forecast: StorageForecast

    init(root: String, index: RecordingIndex, policy: RetentionPolicy, events: RecorderEvents, logger: Logger) {
        self.policy = policy
        self.logger = logger
        let layout = StorageLayout(root: root)
        pendingWrites = PendingIndexWrites(logger: logger)
        indexer = EventIndexer(index: index, layout: layout)
        deleter = RecordingDeleter(layout: layout, index: index, events: events, pending: pendingWrites, logger: logger)
        retention = RetentionEnforcer(index: index, layout: layout, deleter: deleter, logger: logger)
        floor = FreeSpaceFloor(deleter: deleter)
        forecast = StorageForecast(root: root, index: index)
        room = StorageRoom.of(root: root)
        reserve = IndexReserve(layout: layout, indexOnDisk: index.path != nil, logger: logger)
    }

    /// Indexes an event, after the writes still waiting (`pendingWrites`).
    func record(_ event: RecorderEvent) {
        defer {
            // Vigil's own writes are what fills the disk: the floor is looked at after each one.
            switch event {
            case .segmentStarted, .segmentFinalized, .stillSaved: checkFreeSpace(SystemClocks.monotonicNanos())
            default: break
            }
            switch event {
            case .segmentDiscarded: resumeFactor = min(resumeFactor * 2, 12)
            case .segmentFinalized(_, let info) where info.frameCount > 0: resumeFactor = 1
            default: break
            }
            settleRoom()
        }
        pendingWrites.append("index \(event)") { [self] in
            if case .error(_, _, let code?) = event, code.isDiskFull {
                // A write hit ENOSPC: make room now, even if the floor was set to nothing.
                makeRoom()
            } else {
                try indexer.write(event)
            }
        }
        pendingWrites.writeAll(makingRoom: roomForIndex)
    }

    /// After ENOSPC: at least 2 % of the disk is made free, whatever the floor.
    private func makeRoom() { checkFreeSpace(SystemClocks.monotonicNanos(), emergency: true) }

    /// How an index write that found the disk full gets room, in turn: the writers are held back
    /// (so what is freed next stays free) and the oldest recordings swept; then the index's
    /// reserve is given up, for when nothing finished was left to delete.
    private var roomForIndex: [() -> Void] {
        [{ [self] in
            room.hold()
            makeRoom()
        }, { [self] in _ = reserve.release() }]
    }

    /// While the writers are held back (a recording or the index found the disk full), the index
    /// writes what waits, room is made for its reserve and for the recordings, and only then do
    /// the writers go on. Otherwise, a reserve given up is made again once the room allows.
    /// After every event, every 30 s, and when a paused writer asks (about once a second).
    func settleRoom() {
        if room.isHeld {
            pendingWrites.writeAll(makingRoom: roomForIndex)
            guard pendingWrites.isEmpty else { return }
        }
        guard let space = StorageRoom.space(room.root) else { return }
        let toResume = StorageRoom.roomToResume(totalBytes: space.total) * resumeFactor
        let wanted = reserve.missingBytes + toResume
        var free = space.free
        if room.isHeld && free < wanted {
            checkFreeSpace(SystemClocks.monotonicNanos(), emergency: true, wanted: wanted)
            free = StorageRoom.space(room.root)?.free ?? free
        }
        if reserve.missingBytes > 0 && free >= wanted {
            reserve.restore()
            free = StorageRoom.space(room.root)?.free ?? free
        }
        if room.isHeld && reserve.missingBytes == 0 && free >= toResume { room.release() }
    }

    /// Every 30 s: a clock step, the free-space floor (others write to the disk too), retention,
    /// and now and then how many days the disk holds.
    func tick() {
        let now = SystemClocks.monotonicNanos()
        noteClock(wall: SystemClocks.wallNanos(), sinceBoot: SystemClocks.bootNanos())
        pendingWrites.writeAll(makingRoom: roomForIndex)
        settleRoom()
        checkFreeSpace(now)
        enforceRetention(nowWall: SystemClocks.wallNanos())
        trimArchivedCopies(nowWall: SystemClocks.wallNanos())
        forecast.reportIfDue(policy, now: now, logger: logger)
    }

    /// A forward clock step makes retention wary of deleting most of a camera's recordings by age.
    func noteClock(wall: Int64, sinceBoot: Int64) {
        if clock.note(wall: wall, sinceBoot: sinceBoot, index: indexer.index, logger: logger) { retention.clockSuspect = true }
    }

    func enforceRetention(nowWall: Int64) { retention.enforce(policy, nowWall: nowWall) }

    /// From now on every finished file is queued for the archive's bucket (`onQueued` wakes the
    /// uploader), and what was recorded before is queued at once; returns how many that was.
    func startArchiving(keepLocalDays: Double?, onQueued: @escaping @Sendable () -> Void) throws -> Int {
        indexer.archiveQueued = onQueued
        floor.archiving = true
        keepLocalNanos = keepLocalDays.flatMap { Int64(exactly: ($0 * 86_400).rounded()) }.flatMap { $0.multipliedReportingOverflow(by: 1_000_000_000).overflow ? nil : $0 * 1_000_000_000 }
        return try indexer.index.enqueueAllForArchive(nowNanos: SystemClocks.wallNanos())
    }

    /// Queues a file written outside the sessions (a daily video) for the bucket, when archiving.
    func queueForArchive(_ path: String, bytes: Int64) throws { try indexer.queueForArchive(path, bytes: bytes) }

    /// Deletes local copies that the bucket holds and that ended `keep_local_days` ago.
    func trimArchivedCopies(nowWall: Int64) {
        guard let keepLocalNanos else { return }
        do {
            let (cutoff, overflow) = nowWall.subtractingReportingOverflow(keepLocalNanos)
            guard !overflow else { return }
            for entry in try indexer.index.archivedLocalCopies(kinds: nil, endedBefore: cutoff, limit: 1000) {
                deleter.delete(entry, reason: "archived, and ended more than keep_local_days ago")
            }
        } catch {
            logger.error("archive: local copies could not be listed for keep_local_days: \(error)")
        }
    }

    func checkFreeSpace(_ now: Int64, emergency: Bool = false, wanted: Int64 = 0) {
        floor.check(policy, now: now, emergency: emergency, wanted: wanted)
    }

    func daysOfStorageLeft(nowWall: Int64) -> Double? { forecast.daysLeft(policy, nowWall: nowWall) }
}
