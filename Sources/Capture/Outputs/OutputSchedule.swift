/// When an output works: inside windows decided elsewhere (a weekly or sunrise/sunset schedule
/// in the recorder). An answer holds until `untilWallNanos`, so an output asks only when that
/// instant has passed and the per-frame cost is one comparison.
public protocol OutputSchedule: Sendable {
    /// Whether the output works at `wallNanos` (Unix epoch, nanoseconds), and until when that holds.
    func state(atWallNanos wallNanos: Int64) -> (isActive: Bool, untilWallNanos: Int64)
}

/// An `OutputSchedule` read by one owner (an output's thread, the supervisor), caching the
/// current answer so the schedule itself is evaluated only when that answer expires.
public struct ScheduleGate: Sendable {
    public let schedule: (any OutputSchedule)?
    private var isActive = true
    private var validFrom = Int64.max
    private var validUntil = Int64.min

    public init(_ schedule: (any OutputSchedule)?) { self.schedule = schedule }

    /// Whether the schedule is active at `wallNanos` (always true without a schedule).
    public mutating func isActive(at wallNanos: Int64) -> Bool {
        state(at: wallNanos).isActive
    }

    /// Whether it is active at `wallNanos`, and until when that holds (`.max` without a schedule).
    public mutating func state(at wallNanos: Int64) -> (isActive: Bool, untilWallNanos: Int64) {
        guard let schedule else { return (true, .max) }
        if wallNanos < validFrom || wallNanos >= validUntil {
            let state = schedule.state(atWallNanos: wallNanos)
            isActive = state.isActive
            validFrom = wallNanos
            validUntil = max(state.untilWallNanos, wallNanos + 1)
        }
        return (isActive, validUntil)
    }

    /// How many of the instants `first, first + step, …` before `end` fall inside active windows.
    public mutating func activeInstants(from first: Int64, before end: Int64, step: Int64) -> Int {
        guard schedule != nil else { return first < end ? Int((end - first + step - 1) / step) : 0 }
        var count = 0
        var t = first
        while t < end {
            let active = isActive(at: t)
            // Every instant up to the end of this answer shares it.
            let stop = min(end, validUntil)
            let n = stop > t ? (stop - t + step - 1) / step : 1
            if active { count += Int(n) }
            t += n * step
        }
        return count
    }
}
