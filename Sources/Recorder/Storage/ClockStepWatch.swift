import Foundation
import Glibc
import Logging

/// Notices a wall-clock step of more than a minute (NTP setting the clock of a board without a
/// battery, someone running `date`) against the time since boot (which, unlike the monotonic
/// clock, also runs during a suspend, so a resume is no step). After a forward step, what was
/// recorded since boot before it has names and index times from the wrong clock: its index times
/// are moved on by the step so it is judged by when it was really recorded (its files keep their
/// names, and still sort and play). Used only on `StorageKeeper.io`.
struct ClockStepWatch {
    /// Wall clock minus time since boot at the last look: a change is a clock step.
    private var clockOffset: Int64?

    /// Looks at the clock; true when it jumped forward since the last look.
    mutating func note(wall: Int64, sinceBoot: Int64, index: RecordingIndex, logger: Logger) -> Bool {
        let offset = wall - sinceBoot
        defer { clockOffset = offset }
        guard let previous = clockOffset, abs(offset - previous) > 60_000_000_000 else { return false }
        let step = offset - previous
        let before = sinceBoot + previous
        guard step > 0 else {
            logger.warning("the wall clock went back by \(describeSpan(-step)); recordings named from now on sort before the ones just made")
            return false
        }
        do {
            // [boot, before] is what the wrong clock stamped.
            let moved = try index.shiftTimes(by: step, endingFrom: before - sinceBoot, to: before)
            let message = "the wall clock jumped forward by \(describeSpan(step)); \(moved) recording(s) made before that are judged "
                + "by when they were really made, so retention does not take them for old"
            logger.warning("\(message)")
        } catch {
            logger.error("the wall clock jumped forward by \(describeSpan(step)), and the index could not be corrected: \(error)")
        }
        return true
    }
}

/// A span of time as a log line says it: minutes, hours or days.
func describeSpan(_ nanos: Int64) -> String {
    let s = Double(nanos) / 1e9
    return s < 7200 ? String(format: "%.0f min", s / 60) : s < 172_800 ? String(format: "%.1f hours", s / 3600) : String(format: "%.0f days", s / 86400)
}
