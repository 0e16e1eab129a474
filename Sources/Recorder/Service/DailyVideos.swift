import Capture
import Foundation
import Logging
import Plumbing
import ServiceLifecycle
import Synchronization

/// The nightly timelapse video of each camera with `daily_video`: at its local time `at`, the
/// previous local day's stills become `ROOT/CAMERA/timelapse/CAMERA-YYYY-MM-DD.mp4`, indexed (so
/// listed and retained) like every file Vigil writes. Building runs on its own I/O thread; a day
/// without stills is logged, not an error.
final class DailyVideos: Service {
    struct Job: Equatable {
        let camera: String
        let video: DailyVideo
    }

    /// What the service needs of the configuration in force (a reload changes it).
    struct Plan {
        var jobs: [Job]
        var root: String
        var timeZone: TimeZone
    }

    private let logger = Logger(label: "vigil.timelapse")
    private let plan: @Sendable () async -> Plan
    private let storage: StorageKeeper
    /// The time by which builds are due; a test moves it instead of waiting for the night.
    private let clock: @Sendable () -> Date
    /// Builds run here, one after another; the service goes on waiting for the next instant.
    private let io = BlockingIO("vigil.timelapse")
    private let state = Mutex<(next: [String: Date], building: Set<String>)>(([:], []))

    init(plan: @escaping @Sendable () async -> Plan, storage: StorageKeeper, clock: @escaping @Sendable () -> Date) {
        self.plan = plan
        self.storage = storage
        self.clock = clock
    }

    /// Sleeps until the next build is due (by a minute at most, so a clock step or a reload is
    /// seen within a minute), starts what is due, and again, until the group shuts down. A build
    /// under way at shutdown is not waited for.
    func run() async {
        let wakeup = Wakeup()
        await withGracefulShutdownHandler {
            repeat {
                let now = clock()
                let next = startDue(await plan(), now: now)
                let seconds = min(max(next.map { $0.timeIntervalSince(now) } ?? 60, 0.01), 60)
                if !(await wakeup.sleep(nanos: Int64(seconds * 1e9))) { break }
            } while true
        } onGracefulShutdown: {
            wakeup.stop()
        }
    }

    /// Starts the builds that are due at `now`; returns when the next one is due.
    private func startDue(_ plan: Plan, now: Date) -> Date? {
        var earliest: Date?
        for job in plan.jobs {
            let due = state.withLock { $0.next[job.camera] } ?? Self.nextRun(after: now, at: job.video.at, timeZone: plan.timeZone)
            guard now >= due else {
                state.withLock { $0.next[job.camera] = due }
                earliest = min(earliest ?? due, due)
                continue
            }
            let following = Self.nextRun(after: now, at: job.video.at, timeZone: plan.timeZone)
            earliest = min(earliest ?? following, following)
            let day = Self.day(before: due, timeZone: plan.timeZone)
            let started = state.withLock { s -> Bool in
                s.next[job.camera] = following
                return s.building.insert(job.camera).inserted
            }
            guard started else { continue }
            let root = plan.root
            io.enqueue { [self, storage, logger] in
                defer { _ = state.withLock { $0.building.remove(job.camera) } }
                do {
                    if let entry = try Self.build(job, day: day, root: root) {
                        storage.add(entry)
                        let path = "\(root)/\(entry.path)"
                        logger.notice("camera \(job.camera): timelapse video of \(day.label) written to \(path)")
                    } else {
                        logger.notice("camera \(job.camera): no stills on \(day.label), no timelapse video")
                    }
                } catch {
                    logger.error("camera \(job.camera): timelapse video of \(day.label) failed: \(error)")
                }
            }
        }
        return earliest
    }

    /// Builds the video of one local day and returns its index entry; nil when the day has no stills.
    static func build(_ job: Job, day: LocalDay, root: String) throws -> RecordingIndex.Entry? {
        let stills = try TimelapseBuilder.stills(root: root, camera: job.camera, from: WallTime.clamped(day.start), to: WallTime.clamped(day.end) - 1)
        guard !stills.isEmpty else { return nil }
        let path = try StorageLayout(root: root).dailyVideo(camera: job.camera, day: day.label)
        let summary = try TimelapseBuilder.build(stills: stills, output: path, framesPerSecond: job.video.framesPerSecond) { _ in }
        var st = stat()
        stat(path, &st)
        return RecordingIndex.Entry(
            kind: .timelapse, camera: job.camera, path: String(path.dropFirst(root.count + 1)),
            startNanos: WallTime.clamped(day.start), endNanos: WallTime.clamped(day.end),
            frames: summary.frames, bytes: Int64(st.st_size), codec: "h264", width: 0, height: 0, state: .complete)
    }

    /// A local calendar day: [start, end) as instants (23 or 25 hours long on DST days).
    struct LocalDay: Equatable {
        let start: Date
        let end: Date
        let label: String
    }

    /// The local day before the one containing `instant`.
    static func day(before instant: Date, timeZone: TimeZone) -> LocalDay {
        var calendar = Calendar(identifier: .gregorian)
        calendar.timeZone = timeZone
        let today = calendar.startOfDay(for: instant)
        let start = calendar.startOfDay(for: today.addingTimeInterval(-12 * 3600))
        let c = calendar.dateComponents([.year, .month, .day], from: start)
        return LocalDay(start: start, end: today, label: String(format: "%04d-%02d-%02d", c.year!, c.month!, c.day!))
    }

    /// The next instant after `date` whose local time is `at` ("HH:MM"); a time that does not
    /// exist that day (DST gap) means the first instant after the gap.
    static func nextRun(after date: Date, at: String, timeZone: TimeZone) -> Date {
        let parts = at.split(separator: ":").compactMap { Int($0) }
        var calendar = Calendar(identifier: .gregorian)
        calendar.timeZone = timeZone
        let wanted = DateComponents(hour: parts.first ?? 1, minute: parts.count > 1 ? parts[1] : 0)
        return calendar.nextDate(after: date, matching: wanted, matchingPolicy: .nextTime, repeatedTimePolicy: .first, direction: .forward)
            ?? date.addingTimeInterval(86_400)
    }
}
