import Capture
import Foundation
import Synchronization
import Logging

/// The nightly timelapse video of each camera with `daily_video`: at its local time `at`, the
/// previous local day's stills become `ROOT/CAMERA/timelapse/CAMERA-YYYY-MM-DD.mp4`, indexed (so
/// listed and retained) like every file Vigil writes. Building runs on a plain thread; a day
/// without stills is logged, not an error.
final class DailyVideos: Sendable {
    struct Job: Equatable {
        let camera: String
        let video: DailyVideo
    }

    private let logger = Logger(label: "vigil.timelapse")
    /// When each camera's next video is due, and the cameras whose video is being built.
    private let schedule = Mutex<(next: [String: Date], building: Set<String>)>(([:], []))

    /// Starts the builds that are due at `now`; call it now and then.
    func tick(_ jobs: [Job], root: String, timeZone: TimeZone, storage: StorageKeeper, now: Date = Date()) {
        for job in jobs {
            let due: Date? = schedule.withLock { s in
                let due = s.next[job.camera] ?? Self.nextRun(after: now, at: job.video.at, timeZone: timeZone)
                guard now >= due else {
                    s.next[job.camera] = due
                    return nil
                }
                s.next[job.camera] = Self.nextRun(after: now, at: job.video.at, timeZone: timeZone)
                return s.building.insert(job.camera).inserted ? due : nil
            }
            guard let due else { continue }
            let day = Self.day(before: due, timeZone: timeZone)
            Thread.detachNewThread { [self] in
                defer { _ = schedule.withLock { $0.building.remove(job.camera) } }
                do {
                    if let entry = try Self.build(job, day: day, root: root) {
                        storage.add(entry)
                        let path = StorageLayout(root: root).absolute(entry.path)
                        logger.notice("camera \(job.camera): timelapse video of \(day.label) written to \(path)")
                    } else {
                        logger.notice("camera \(job.camera): no stills on \(day.label), no timelapse video")
                    }
                } catch {
                    logger.error("camera \(job.camera): timelapse video of \(day.label) failed: \(error)")
                }
            }
        }
    }

    /// Builds the video of one local day and returns its index entry; nil when the day has no stills.
    static func build(_ job: Job, day: LocalDay, root: String) throws -> RecordingIndex.Entry? {
        let stills = TimelapseBuilder.stills(root: root, camera: job.camera, from: day.start, to: day.end.addingTimeInterval(-0.001))
        guard !stills.isEmpty else { return nil }
        let path = try StorageLayout(root: root).dailyVideo(camera: job.camera, day: day.label)
        let summary = try TimelapseBuilder.build(stills: stills, output: path, framesPerSecond: job.video.framesPerSecond) { _ in }
        var st = stat()
        stat(path, &st)
        return RecordingIndex.Entry(
            kind: .timelapse, camera: job.camera, path: String(path.dropFirst(root.count + 1)),
            startNanos: Int64(day.start.timeIntervalSince1970 * 1e9), endNanos: Int64(day.end.timeIntervalSince1970 * 1e9),
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
