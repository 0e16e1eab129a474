import CheckedMath

/// Places a network camera's frames on Vigil's clocks, one model for every kind of stream, so
/// that a file's timeline is the scene's and a file is cut only where the scene was not seen:
///
/// - Frames with camera timestamps (RTP's 90 kHz) are spaced by the camera's clock: inside one
///   run of a connection a file's frame times are the camera's steps exactly. Arrivals only say
///   how late a frame is, never when it was taken: a frame arrives after it was captured, by
///   the network's latency or by a stall that held it. So the times follow the lower envelope
///   of the arrivals (the least late frames), not their mean, and only when that envelope has
///   left a band of `driftBandNanos` are they slewed towards it, by at most `cameraSlewPerMille`
///   ‰ of each step: a camera clock up to 1 % fast or slow is followed for good, without a
///   jump, and a steady one is copied exactly. A delivery stall whose frames come in a burst
///   afterwards, camera times continuous, is latency: no jump, no gap, no cut.
/// - Frames without (HTTP MJPEG; libavformat's invented times never get here, see
///   `NetworkSource`) are spaced by the frame interval learnt from their arrivals (their mean
///   spacing over the first `warmupFrames`, then an alpha-beta tracker), slewed towards the
///   arrivals by up to `arrivalSlewPerMille` ‰ of a step, so network jitter does not reach the
///   file. One that comes later than `lateLimit` is placed at its arrival: a pause stays a pause.
///   Frames held up and sent at once after it are squeezed (`leadLimit`), never placed seconds
///   ahead of their arrival.
/// - A timestamp that repeats, goes back, or leaps more than `jumpLimitNanos`, a frame placed
///   more than that ahead of its arrival, or frames all later than that for `lateRunNanos` (no
///   burst caught up: the camera's times fell behind) is a jump of the camera's clock: the times
///   re-anchor at the arrival and a new run begins (`jumped`, said in the log), so the movie
///   output starts a new file at the next keyframe (the frames before it stay in the old file,
///   spaced on; none is lost). A camera whose clock jumps more than `jumpsBeforeDistrust` times
///   in `jumpWindowNanos` would make a file of every group of pictures: from there on this
///   connection's frames are spaced as if they had no times (`distrusted`, said once). Only when
///   the file's timeline could not stay increasing is the frame flagged `discontinuity`, which
///   ends the file before it.
///
/// Camera times are 90 kHz ticks of any 64-bit value: every step is computed with checked
/// arithmetic, and one that does not fit is a jump like any other.
struct CameraClock {
    struct Placed: Equatable {
        var monotonic: Int64
        var wall: Int64
        /// The camera's timestamps jumped here: the clock re-anchored and a new run begins (a new
        /// file from the next keyframe).
        var jumped = false
        /// The camera's clock jumped too often: from this frame on its times are not used.
        var distrusted = false
        /// The frame could not be placed after the one before: the file must end before it.
        var discontinuity = false
    }

    /// A camera step longer than this, or a frame placed this far ahead of its arrival, is a jump.
    static let jumpLimitNanos: Int64 = 3_000_000_000
    /// More jumps than this within `jumpWindowNanos` and the camera's times are not used any more
    /// on this connection: three new files in a minute for a clock that was set, not one a second
    /// for a camera that sends nonsense.
    static let jumpsBeforeDistrust = 3
    static let jumpWindowNanos: Int64 = 60_000_000_000
    /// Frames with camera times that all come later than the jump limit for this long are not a
    /// stall's burst (which catches up) but a camera whose times fell behind: re-anchored.
    static let lateRunNanos: Int64 = 10_000_000_000
    /// How fast the lower envelope of lateness may rise, in ‰ of each step: it follows a camera
    /// clock up to 2 % slow (the slew follows 1 %), while a stall's burst (a few seconds of frames) lifts it by tens of
    /// milliseconds at most.
    static let envelopeRisePerMille: Int64 = 20
    /// How much of each step camera times are bent towards arrivals: 1 % fast or slow is followed.
    static let cameraSlewPerMille: Int64 = 10
    /// How far the lower envelope of lateness may lie from zero before camera times are bent at all.
    static let driftBandNanos: Int64 = 250_000_000
    /// How much of each step arrival-spaced times are bent towards arrivals.
    static let arrivalSlewPerMille: Int64 = 100
    /// The share of the distance to the arrival closed at each frame (1/8), within the slew.
    static let followDivisor: Int64 = 8
    /// The share of that distance by which the learnt interval changes (1/128): an alpha-beta
    /// tracker, critically damped, so the interval settles on the camera's without an offset.
    static let learnDivisor: Int64 = 128
    /// Frames over which the interval is first learnt as the mean spacing of the arrivals.
    static let warmupFrames: Int64 = 32

    /// The frame interval: learnt from arrivals, or the camera's own steps when it sends times.
    private(set) var intervalNanos: Int64?
    /// While warming up: the arrival the mean spacing is measured from, and frames since.
    private var warmup: (start: Int64, frames: Int64)?
    private var last: Int64?
    private var lastTicks: Int64?
    /// Arrival minus placed time, its lower envelope (camera times only): the least a frame
    /// was late lately. It falls at once to an earlier frame and rises by at most
    /// `envelopeRisePerMille` of a step per frame.
    private var lateness: Int64 = 0
    /// Since when (arrival) every frame with camera time came later than the jump limit.
    private var lateSince: Int64?
    /// The arrivals of the last `jumpsBeforeDistrust` jumps, oldest first.
    private var recentJumps: [Int64] = []
    /// The camera's clock jumped too often: its times are ignored from here on.
    private(set) var distrustsCameraTimes = false

    /// Frames per second by the learnt interval, rounded to a hundredth.
    var framesPerSecond: Double? { FrameInterval(storedNanos: intervalNanos ?? 0).framesPerSecond }

    /// A frame without camera time that comes later than this after where it was expected is
    /// placed at its arrival (the camera paused); earlier ones are smoothed.
    static func lateLimit(step: Int64) -> Int64 { max(500_000_000, 4 * step) }

    /// How far ahead of its arrival a frame without camera time is placed at most, beyond the
    /// smoothing of jitter (steps at most 2 s: this fits). Half a second: frames a busy network
    /// or camera sends a few at a time keep their spacing (at 100 ms, a 10 fps camera's frames
    /// held 200 ms were squeezed and its files came out 0.2 s short); a longer stall's burst is
    /// still squeezed well before the jump limit.
    static func leadLimit(step: Int64) -> Int64 { max(500_000_000, 2 * step) }
    /// The shortest step a burst is squeezed to: this share of the interval.
    static let squeezeDivisor: Int64 = 16

    mutating func place(cameraTicks: Int64?, arrivalMonotonic arrival: Int64, arrivalWall: Int64) -> Placed {
        var placed = placeTrusting(cameraTicks: distrustsCameraTimes ? nil : cameraTicks, arrival: arrival, arrivalWall: arrivalWall)
        guard placed.jumped, cameraTicks != nil else { return placed }
        guard !distrustsCameraTimes else {
            // Its times are not used any more: one run until the connection ends.
            placed.jumped = false
            return placed
        }
        // A sliding window: this jump and the last `jumpsBeforeDistrust` within a minute.
        if recentJumps.count == Self.jumpsBeforeDistrust, let oldest = recentJumps.first,
           let since = arrival.subtracting(oldest), since < Self.jumpWindowNanos {
            // Not a new run: the times are the arrivals' from here on, and the file goes on.
            distrustsCameraTimes = true
            lastTicks = nil
            placed.jumped = false
            placed.distrusted = true
            return placed
        }
        if recentJumps.count == Self.jumpsBeforeDistrust { recentJumps.removeFirst() }
        recentJumps.append(arrival)
        return placed
    }

    private mutating func placeTrusting(cameraTicks: Int64?, arrival: Int64, arrivalWall: Int64) -> Placed {
        let wallOffset = arrivalWall.subtracting(arrival) ?? 0
        func placed(_ monotonic: Int64, jumped: Bool = false, discontinuity: Bool = false) -> Placed {
            last = monotonic
            return Placed(monotonic: monotonic, wall: monotonic.adding(wallOffset) ?? arrivalWall, jumped: jumped, discontinuity: discontinuity)
        }
        guard let last else {
            lastTicks = cameraTicks
            warmup = (arrival, 0)
            return placed(arrival)
        }
        var jumped = false
        var cameraStep: Int64?
        if let cameraTicks {
            if let previous = lastTicks, let s = Self.nanos(from: previous, to: cameraTicks), s > 0, s <= Self.jumpLimitNanos {
                cameraStep = s
            } else if lastTicks != nil {
                jumped = true
            }
            lastTicks = cameraTicks
        }
        if let w = warmup {
            // The mean spacing since the warm-up began: exact within a jitter ÷ frames.
            let frames = w.frames + 1
            warmup = frames < Self.warmupFrames ? (w.start, frames) : nil
            if cameraStep == nil, let span = arrival.subtracting(w.start), FrameInterval.range.contains(span / frames) { intervalNanos = span / frames }
        }
        let step = cameraStep ?? intervalNanos ?? FrameInterval.range.lowerBound
        // `last` follows the arrivals within the jump limit and `step` is at most 3 s: these fit.
        guard let predicted = last.adding(step), let error = arrival.subtracting(predicted) else {
            return placed(arrival, jumped: true, discontinuity: arrival <= last)
        }
        let reanchor = cameraStep != nil
            ? error < -Self.jumpLimitNanos || lateTooLong(error: error, arrival: arrival)
            : error > Self.lateLimit(step: step) || error < -Self.jumpLimitNanos
        if reanchor {
            // Without camera times, late: the camera paused. With them, their clock ran away
            // (ahead by seconds, or behind for good). Either way the arrival is the truth from
            // here on. A pause does not change the camera's rate: a learnt interval is kept (the
            // frames held up in the pause may come in a burst that says nothing of it).
            if warmup != nil || intervalNanos == nil { warmup = (arrival, 0) }
            lateness = 0
            lateSince = nil
            return placed(arrival, jumped: jumped || cameraStep != nil || error < -Self.jumpLimitNanos, discontinuity: arrival <= last)
        }
        guard let cameraStep else {
            return placed(byArrival(predicted: predicted, error: error, step: step, arrival: arrival, last: last), jumped: jumped)
        }
        intervalNanos = intervalNanos.map { $0 + (cameraStep - $0) / 16 } ?? cameraStep
        return placed(max(predicted + cameraCorrection(error: error, step: step), last + 1), jumped: jumped)
    }

    /// Frames with camera times: whether every frame for `lateRunNanos` came later than the
    /// jump limit (a stall's burst catches up well before).
    private mutating func lateTooLong(error: Int64, arrival: Int64) -> Bool {
        guard error > Self.jumpLimitNanos else {
            lateSince = nil
            return false
        }
        let since = lateSince ?? arrival
        lateSince = since
        return arrival.subtracting(since).map { $0 >= Self.lateRunNanos } ?? true
    }

    /// Frames with camera times: the slew that keeps the lower envelope of lateness within the
    /// band, at most `cameraSlewPerMille` ‰ of the step.
    private mutating func cameraCorrection(error: Int64, step: Int64) -> Int64 {
        lateness = min(lateness + step / 1000 * Self.envelopeRisePerMille, error)
        let band = Self.driftBandNanos
        let beyond = lateness > band ? lateness - band : lateness < -band ? lateness + band : 0
        let bound = step / 1000 * Self.cameraSlewPerMille
        return min(max(beyond / Self.followDivisor, -bound), bound)
    }

    /// Frames without camera times: the learnt interval, bent towards the arrivals; a burst is
    /// squeezed rather than carried ahead.
    private mutating func byArrival(predicted: Int64, error: Int64, step: Int64, arrival: Int64, last: Int64) -> Int64 {
        if warmup == nil, let interval = intervalNanos {
            // Each frame's say is bounded by half a step: a burst's frames, many steps early,
            // would otherwise drag the interval towards nothing.
            let say = min(max(error, -step / 2), step / 2)
            intervalNanos = min(max(interval + say / Self.learnDivisor, FrameInterval.range.lowerBound), FrameInterval.range.upperBound)
        }
        let bound = step / 1000 * Self.arrivalSlewPerMille
        let correction = min(max(error / Self.followDivisor, -bound), bound)
        // Frames held up and then sent at once (a burst after a stall) were seen before they
        // arrived, never after: past `leadLimit` ahead of its arrival, each step shrinks to a
        // sixteenth, so the burst is squeezed instead of carried seconds ahead (and past the
        // jump limit, which would end the file).
        let ceiling = arrival.adding(Self.leadLimit(step: step)) ?? arrival
        return max(min(predicted + correction, ceiling), last + max(1, step / Self.squeezeDivisor))
    }

    private static func nanos(from start: Int64, to end: Int64) -> Int64? {
        end.subtracting(start).flatMap { Nanoseconds.from(ticks: $0, clockRate: 90_000) }
    }
}
