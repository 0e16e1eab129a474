import Capture
import CheckedMath
import Foundation
import Logging
import Plumbing

/// How many days of recordings the disk holds at the recent rate: said in the log ten minutes
/// into recording, then hourly, and at start-up. Used only on `StorageKeeper.io`.
struct StorageForecast {
    let root: String
    let index: RecordingIndex
    /// The first estimate of days left comes after ten minutes of recording, then hourly.
    private var nextReport = SystemClocks.monotonicNanos() + 600_000_000_000

    init(root: String, index: RecordingIndex) {
        self.root = root
        self.index = index
    }

    /// Logs the estimate when it is due.
    mutating func reportIfDue(_ policy: RetentionPolicy, now: Int64, logger: Logger) {
        guard now >= nextReport else { return }
        nextReport = now + 3_600_000_000_000
        if let days = daysLeft(policy, nowWall: SystemClocks.wallNanos()) {
            logger.notice("at the recent rate the disk under \(root) holds about \(String(format: "%.1f", days)) days of recordings")
        }
    }

    /// How many days of recordings this disk holds at the rate of the last day: the bytes
    /// recordings use now plus what is free above the floor, divided by bytes per day. Nil
    /// before there is a rate to go by.
    func daysLeft(_ policy: RetentionPolicy, nowWall: Int64) -> Double? {
        guard let (free, total) = FreeSpaceFloor.space(root) else { return nil }
        let recent: (bytes: Int64, firstStart: Int64?), stored: Int64
        do {
            recent = try index.bytesRecorded(sinceNanos: nowWall - 86_400_000_000_000)
            stored = try index.entries(states: StorageKeeper.deletable).totalBytes(\.bytes)
        } catch {
            Logger(label: "vigil.storage").warning("the days-left estimate cannot read the index: \(error)")
            return nil
        }
        guard let first = recent.firstStart, recent.bytes > 0 else { return nil }
        // `first` is an index row's start: from outside, so subtracted and added with checks.
        let span = max(Double(nowWall.subtracting(first) ?? .max) / 86_400e9, 1.0 / 1440)
        let perDay = Double(recent.bytes) / span
        return Double(stored.saturatingAdding(max(free.subtracting(policy.freeFloor(totalBytes: total)) ?? 0, 0))) / perDay
    }
}
