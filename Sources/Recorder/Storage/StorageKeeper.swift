import Capture
import Foundation
import Glibc
import Logging

/// Keeps a storage root in order while the recorder runs: recovers it at start-up, indexes every
/// segment and still as it is written, enforces retention (age and bytes per camera, every 30 s)
/// and the free-space floor (every 2 s, sweeping the oldest recordings when it is crossed, which
/// is also how a full disk is cleared so recording resumes by itself). All of its work runs on one
/// serial queue: never on a capture thread or on Swift's cooperative pool.
public final class StorageKeeper: @unchecked Sendable {
    public let root: String
    public let index: RecordingIndex
    public let recovery: RecoverySummary
    private var policy: RetentionPolicy
    private let events: RecorderEvents
    private let queue = DispatchQueue(label: "vigil.storage")
    private let logger = Logger(label: "vigil.storage")
    private var timer: DispatchSourceTimer?
    private var listener: Task<Void, Never>?
    private var lastRetention: Int64 = 0
    private var lastNothingToFree: Int64?
    private var diskLowReported = false
    /// The first estimate of days left comes after ten minutes of recording, then hourly.
    private var nextDaysReport = Clock.monotonicNanos() + 600_000_000_000

    /// Opens the index under `root` and recovers what an interrupted run left behind.
    public static func open(root: String, policy: RetentionPolicy, events: RecorderEvents) throws -> StorageKeeper {
        let index = try RecordingIndex(root: root)
        let recovery = try StorageRecovery.run(root: root, index: index, logger: Logger(label: "vigil.storage"))
        return StorageKeeper(root: root, index: index, recovery: recovery, policy: policy, events: events)
    }

    private init(root: String, index: RecordingIndex, recovery: RecoverySummary, policy: RetentionPolicy, events: RecorderEvents) {
        self.root = root
        self.index = index
        self.recovery = recovery
        self.policy = policy
        self.events = events
    }

    /// Starts indexing events and enforcing retention.
    public func start() {
        let stream = events.stream()
        listener = Task.detached { [queue] in
            for await event in stream {
                queue.async { self.record(event) }
            }
        }
        let timer = DispatchSource.makeTimerSource(queue: queue)
        timer.schedule(deadline: .now(), repeating: 2.0)
        timer.setEventHandler { [weak self] in self?.tick() }
        timer.resume()
        self.timer = timer
    }

    /// Stops, after every event received so far has been indexed.
    public func stop() {
        listener?.cancel()
        timer?.cancel()
        flush()
    }

    /// Waits until what was queued is done (events indexed, a sweep finished).
    public func flush() {
        // Events travel through an async stream first; give them a moment to arrive.
        Thread.sleep(forTimeInterval: 0.05)
        queue.sync {}
    }

    /// A new retention policy (configuration reload).
    public func update(_ policy: RetentionPolicy) { queue.async { self.policy = policy } }

    // MARK: - Indexing

    private func relative(_ path: String) -> String {
        path.hasPrefix(root + "/") ? String(path.dropFirst(root.count + 1)) : path
    }

    private func record(_ event: RecorderEvent) {
        do {
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
            case .stillSaved(let camera, let path, let shot):
                var st = stat()
                stat(path, &st)
                let at = shot ?? Clock.wallNanos()
                try index.put(RecordingIndex.Entry(
                    kind: .still, camera: camera, path: relative(path), startNanos: at, endNanos: at, frames: 1,
                    bytes: Int64(st.st_size), codec: "mjpeg", width: 0, height: 0, state: .complete))
            case .error(_, let message) where message.contains("disk is full") || message.contains("No space left"):
                // A write hit ENOSPC: make room now, even if the floor was set to nothing.
                checkFreeSpace(Clock.monotonicNanos(), emergency: true)
            default:
                break
            }
        } catch {
            logger.error("could not index \(event): \(error)")
        }
    }

    // MARK: - Retention and free space

    private func tick() {
        let now = Clock.monotonicNanos()
        checkFreeSpace(now)
        if now - lastRetention >= 30_000_000_000 {
            lastRetention = now
            enforceRetention(nowWall: Clock.wallNanos())
        }
        if now >= nextDaysReport {
            nextDaysReport = now + 3_600_000_000_000
            if let days = daysOfStorageLeft() {
                logger.notice("at the recent rate the disk under \(root) holds about \(String(format: "%.1f", days)) days of recordings")
            }
        }
    }

    /// Deletes what is older or more than each camera's limits allow.
    func enforceRetention(nowWall: Int64) {
        do {
            for camera in try index.cameras() {
                let limits = policy.limits(for: camera)
                for (kind, limit) in [(RecordingIndex.Kind.segment, limits.videos), (.still, limits.stills)] {
                    let entries = try index.entries(camera: camera, kind: kind, states: Self.deletable)
                    var doomed: [(RecordingIndex.Entry, String)] = []
                    if let days = limit.maxAgeDays {
                        let cutoff = nowWall - Int64(days * 86_400 * 1e9)
                        doomed += entries.filter { $0.endNanos < cutoff }.map { ($0, "older than \(DeviceFormat.rate(days)) days") }
                    }
                    if let maxBytes = limit.maxBytes {
                        var total: Int64 = 0
                        for entry in entries.reversed() {
                            total += entry.bytes
                            if total > maxBytes && !doomed.contains(where: { $0.0.path == entry.path }) {
                                doomed.append((entry, "camera over its \(maxBytes) bytes"))
                            }
                        }
                    }
                    for (entry, reason) in doomed { delete(entry, reason: reason) }
                }
            }
        } catch {
            logger.error("retention: \(error)")
        }
    }

    /// Below the free-space floor: delete the oldest recordings (videos of every camera first,
    /// stills only when no video is left) until the floor is met again.
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
            for kind in [RecordingIndex.Kind.segment, .still] where free < floor {
                for entry in try index.entries(kind: kind, states: Self.deletable) where free < floor {
                    delete(entry, reason: "free space below \(floor / 1_048_576) MiB")
                    (free, _) = Self.space(root) ?? (free + entry.bytes, total)
                }
            }
        } catch {
            logger.error("free-space sweep: \(error)")
        }
        if free < floor, lastNothingToFree.map({ now - $0 >= 30_000_000_000 }) ?? true {
            lastNothingToFree = now
            let message = "the disk under \(root) is full and no finished recording is left to delete (\(free / 1_048_576) MiB free): "
                + "free space or give Vigil another disk; recording resumes by itself as soon as there is room"
            logger.error("\(message)")
            events.emit(.error(camera: "storage", message: message))
        }
    }

    /// Never a file being written: only finished recordings.
    static let deletable: [RecordingIndex.State] = [.complete, .interrupted, .recovered]

    private func delete(_ entry: RecordingIndex.Entry, reason: String) {
        let path = "\(root)/\(entry.path)"
        guard unlink(path) == 0 || errno == ENOENT else {
            logger.error("could not delete \(path): \(String(cString: strerror(errno)))")
            return
        }
        try? index.remove(path: entry.path)
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
    public func daysOfStorageLeft(nowWall: Int64 = Clock.wallNanos()) -> Double? {
        guard let (free, total) = Self.space(root),
              let recent = try? index.bytesRecorded(sinceNanos: nowWall - 86_400_000_000_000),
              let first = recent.firstStart, recent.bytes > 0 else { return nil }
        let span = max(Double(nowWall - first) / 86_400e9, 1.0 / 1440)
        let perDay = Double(recent.bytes) / span
        let stored = (try? index.entries(states: Self.deletable).reduce(Int64(0)) { $0 + $1.bytes }) ?? 0
        return Double(stored + max(free - policy.freeFloor(totalBytes: total), 0)) / perDay
    }
}
