import CheckedMath

/// Places camera timestamps on Vigil's clocks: the first packet is anchored to its arrival
/// time; later packets are spaced by the camera's timestamps. A timestamp that goes back,
/// repeats, or drifts more than `jumpLimitNanos` from its arrival re-anchors and is flagged,
/// so a recording ends there. Packets without timestamps (MJPEG over HTTP) take their arrival.
/// Camera times are 90 kHz ticks of any value: every step is computed with checked arithmetic,
/// and one that does not fit is a jump like any other.
struct CameraClock {
    static let jumpLimitNanos: Int64 = 3_000_000_000
    private var anchor: (ticks: Int64, monotonic: Int64, wall: Int64)?
    private var lastTicks: Int64?

    mutating func place(cameraTicks: Int64?, arrivalMonotonic: Int64, arrivalWall: Int64) -> (monotonic: Int64, wall: Int64, discontinuity: Bool) {
        guard let cameraTicks else { return (arrivalMonotonic, arrivalWall, false) }
        var discontinuity = false
        if let a = anchor, let last = lastTicks {
            discontinuity = cameraTicks <= last || Self.placed(cameraTicks, after: a, within: arrivalMonotonic) == nil
        }
        if anchor == nil || discontinuity { anchor = (cameraTicks, arrivalMonotonic, arrivalWall) }
        lastTicks = cameraTicks
        let a = anchor!
        // Within the jump limit of the arrival (or the anchor itself): the sums fit.
        let offset = Self.nanos(from: a.ticks, to: cameraTicks) ?? 0
        return (a.monotonic &+ offset, a.wall &+ offset, discontinuity)
    }

    /// Where `ticks` falls on the monotonic clock, if within the jump limit of `arrival`.
    private static func placed(_ ticks: Int64, after anchor: (ticks: Int64, monotonic: Int64, wall: Int64), within arrival: Int64) -> Int64? {
        guard let offset = nanos(from: anchor.ticks, to: ticks), let mapped = anchor.monotonic.adding(offset),
              let drift = mapped.subtracting(arrival), drift.magnitude <= UInt64(jumpLimitNanos) else { return nil }
        return mapped
    }

    private static func nanos(from start: Int64, to end: Int64) -> Int64? {
        end.subtracting(start).flatMap { Nanoseconds.from(ticks: $0, clockRate: 90_000) }
    }
}
