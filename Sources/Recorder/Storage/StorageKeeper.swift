import Capture
import Foundation
import Glibc
import Logging
import Plumbing
import Synchronization

/// Keeps a storage root in order while the recorder runs: recovers it at start-up (`open`), then
/// hands every recorder event and a tick every 30 s to its jobs (`StorageJobs`: indexing,
/// retention, the free-space floor, clock steps, the days-left estimate). All of that work runs
/// on its own I/O thread (`io`): never on a capture thread or on Swift's cooperative pool.
/// `StorageService` drives it in `vigil run`.
public final class StorageKeeper: Sendable {
    public let root: String
    public let index: RecordingIndex
    public let recovery: RecoverySummary
    private let events: RecorderEvents
    /// The keeper's thread: SQLite, statvfs, unlink. Every job runs there.
    let io = BlockingIO("vigil.storage")
    private let logger = Logger(label: "vigil.storage")
    /// Set by `start()` and cleared by `stop()`, which callers may run from any task.
    private let subscription = Mutex<UUID?>(nil)
    /// Taken only on `io` (and by tests that drive the jobs directly), so never contended: the
    /// lock is what lets the compiler check that the jobs' state is not shared.
    private let jobs: Mutex<StorageJobs>

    /// Opens the index under `root` and recovers what an interrupted run left behind. The files
    /// are the truth, so a bad index never stops recording: a damaged one is moved aside
    /// (`vigil-index.sqlite3.corrupt-STAMP`) and rebuilt from the files; one that cannot be
    /// written (read-only, disk full, newer schema) is left alone and an index in memory, built
    /// from the files, serves this run. Either way a log line says what happened.
    public static func open(root: String, policy: RetentionPolicy, events: RecorderEvents, catalogJournal: Bool = false) throws -> StorageKeeper {
        let logger = Logger(label: "vigil.storage")
        let layout = StorageLayout(root: root)
        let path = layout.indexPath
        func openFile() throws -> (RecordingIndex, RecoverySummary) {
            let index = try RecordingIndex(root: root)
            try index.checkIntegrity()
            // Before recovery, whose changes the cluster's catalogue must see too.
            try index.keepCatalogJournal(catalogJournal)
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
            // Room is made from the recordings (listed by an index in memory) and the file tried
            // again; the index's reserve from the last run is room for exactly this.
            unlink(layout.indexReservePath)
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
        self.events = events
        jobs = Mutex(StorageJobs(root: root, index: index, policy: policy, events: events, logger: logger))
    }

    /// Starts indexing events. Events are handed to the keeper's thread as they are emitted, so
    /// `stop()` after the cameras have stopped indexes all of them. Retention and the periodic
    /// look at free space are `tick()`, which the storage service calls every 30 s.
    public func start() {
        let id = events.subscribe { [self] event in io.enqueue { self.jobs.withLock { $0.record(event) } } }
        subscription.withLock { $0 = id }
        // From now on the keeper says when writers that met a full disk go on (`StorageRoom`).
        let room = StorageRoom.of(root: root)
        room.manage { [self] in
            io.enqueue {
                room.lookBegins()
                self.jobs.withLock { $0.settleRoom() }
            }
        }
        // The index's reserve, made now if the room allows.
        io.enqueue { self.jobs.withLock { $0.settleRoom() } }
    }

    /// Stops, after every event emitted so far has been indexed.
    public func stop() async {
        subscription.withLock { id in
            id.map(events.unsubscribe)
            id = nil
        }
        await flush()
        StorageRoom.of(root: root).unmanage()
    }

    /// Waits until what was handed over is done (every event emitted so far indexed, a sweep finished).
    public func flush() async {
        await io.run {}
    }

    /// A new retention policy (configuration reload).
    public func update(_ policy: RetentionPolicy) { io.enqueue { self.jobs.withLock { $0.policy = policy } } }

    /// Indexes a file written outside the capture sessions (a daily timelapse video), and queues
    /// it for the archive.
    func add(_ entry: RecordingIndex.Entry) {
        io.enqueue {
            do {
                try self.index.put(entry)
                try self.jobs.withLock { try $0.queueForArchive(entry.path, bytes: entry.bytes) }
            } catch { self.logger.error("could not index \(entry.path): \(error)") }
        }
    }

    /// `[archive]`: queues every finished file for the bucket from now on, and what is already
    /// recorded; `onQueued` is called after each file is queued. Returns how many were queued now.
    public func startArchiving(keepLocalDays: Double?, onQueued: @escaping @Sendable () -> Void) async throws -> Int {
        try await io.run { try self.jobs.withLock { try $0.startArchiving(keepLocalDays: keepLocalDays, onQueued: onQueued) } }
    }

    /// A file reached the bucket: with keep_local_days = 0 its local copy goes now, not at the next tick.
    public func archived() {
        io.enqueue { self.jobs.withLock { $0.trimArchivedCopies(nowWall: SystemClocks.wallNanos()) } }
    }

    /// Every 30 s, on `io`: a clock step, pending index writes, the floor, retention, the estimate.
    func tick() { jobs.withLock { $0.tick() } }

    /// Looks for a wall-clock step (`ClockStepWatch`).
    func noteClock(wall: Int64, sinceBoot: Int64) { jobs.withLock { $0.noteClock(wall: wall, sinceBoot: sinceBoot) } }

    /// Deletes what each camera's limits no longer allow (`RetentionEnforcer`).
    func enforceRetention(nowWall: Int64) { jobs.withLock { $0.enforceRetention(nowWall: nowWall) } }

    /// Below the free-space floor, deletes the oldest recordings (`FreeSpaceFloor`).
    func checkFreeSpace(_ now: Int64, emergency: Bool = false) { jobs.withLock { $0.checkFreeSpace(now, emergency: emergency) } }

    /// How many days of recordings this disk holds at the recent rate (`StorageForecast`); nil before there is a rate.
    public func daysOfStorageLeft(nowWall: Int64 = SystemClocks.wallNanos()) -> Double? {
        jobs.withLock { $0.daysOfStorageLeft(nowWall: nowWall) }
    }

    /// Kinds under a camera's video limits, and under its stills limits (the timelapse product).
    static let videoKinds: [RecordingIndex.Kind] = [.segment]
    static let stillKinds: [RecordingIndex.Kind] = [.still, .snapshot, .timelapse]
    /// Never a file being written: only finished recordings, and quarantined leftovers.
    static let finished: [RecordingIndex.State] = [.complete, .interrupted, .recovered]
    static let deletable = finished + [.quarantined]
}
