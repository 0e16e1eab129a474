@testable import Capture
import CaptureTesting
import RTSP
import Testing

/// The clock model of network cameras (`CameraClock`), driven with simulated arrivals: an
/// injected clock, so an hour of a drifting camera takes a fraction of a second.
@Suite struct CameraClockTests {
    static let rates: [Double] = [5, 10, 12.5, 15, 30]
    static let start: Int64 = 1_000_000_000_000

    /// A camera whose clock runs 0.5 % fast or slow, with network jitter of ±15 ms, for an
    /// hour: its times are followed without one jump (the old clock re-anchored, and cut the
    /// file, every time the drift passed 3 s: every 10 minutes), each frame is spaced as the
    /// camera spaced it within 1 %, and the times stay with the wall clock.
    @Test(arguments: [-5.0, 5.0]) func aCameraClockOffByHalfAPercentIsFollowedForAnHour(perMille: Double) {
        var random = SeededRandom(seed: 26)
        for fps in Self.rates {
            var clock = CameraClock()
            let frames = Int(3600 * fps)
            let realStep = 1e9 / fps
            let tickStep = 90_000 / fps * (1 + perMille / 1000)
            var jumps = 0, cuts = 0, badSteps = 0, worstOffset: Int64 = 0
            var previous: Int64?
            for i in 0..<frames {
                let truth = Self.start + Int64((Double(i) * realStep).rounded())
                let arrival = truth + 20_000_000 + Int64.random(in: -15_000_000...15_000_000, using: &random)
                let ticks = Int64((Double(i) * tickStep).rounded())
                let placed = clock.place(cameraTicks: ticks, arrivalMonotonic: arrival, arrivalWall: arrival + 7)
                if placed.jumped { jumps += 1 }
                if placed.discontinuity { cuts += 1 }
                #expect(placed.wall == placed.monotonic + 7)
                if let previous {
                    let step = Double(placed.monotonic - previous), cameraStep = tickStep / 90_000 * 1e9
                    if abs(step - cameraStep) > cameraStep * 0.0101 + 1 { badSteps += 1 }
                }
                previous = placed.monotonic
                worstOffset = max(worstOffset, abs(placed.monotonic - truth - 20_000_000))
            }
            #expect(jumps == 0 && cuts == 0, "\(fps) fps, \(perMille) ‰: \(jumps) jumps, \(cuts) cuts")
            #expect(badSteps == 0, "\(fps) fps, \(perMille) ‰: \(badSteps) steps not the camera's within 1 %")
            // Once the drift passes the band (250 ms), half a percent of each step is taken back:
            // the times stay within the band and a few frames of the scene's, never minutes off
            // after an hour.
            #expect(worstOffset < CameraClock.driftBandNanos + Int64(realStep * 8) + 15_000_000, "\(fps) fps, \(perMille) ‰: \(worstOffset / 1_000_000) ms off the scene")
        }
    }

    /// A steady camera whose pictures arrive in batches (Vigil's client reads every 100 ms) and
    /// whose first picture came sooner than the rest: its times are copied exactly, never bent
    /// towards the arrivals' changing latency (a 60 s file came out 6 frames off).
    @Test func aSteadyCameraIsCopiedExactlyWhateverItsLatency() {
        for fps in Self.rates {
            var clock = CameraClock()
            let step = Int64(1e9 / fps)
            var placed: [Int64] = []
            for i in 0..<Int(120 * fps) {
                let truth = Self.start + Int64(i) * step
                // The first picture at once; the others with 20 ms latency, read in 100 ms batches.
                let arrival = i == 0 ? truth : ((truth + 20_000_000) / 100_000_000 + 1) * 100_000_000
                let ticks = Int64(i) * Int64(90_000 / fps)
                placed.append(clock.place(cameraTicks: ticks, arrivalMonotonic: arrival, arrivalWall: arrival).monotonic)
            }
            // 90 kHz steps of a whole number of ticks: every step the same number of nanoseconds.
            let steps = Set(zip(placed, placed.dropFirst()).map { $1 - $0 })
            #expect(steps.count == 1, "\(fps) fps: steps of \(steps.sorted().prefix(5)) ns")
        }
    }

    /// Frames without camera times (HTTP MJPEG) at each rate, with ±15 ms of jitter: once the
    /// interval is learnt (32 frames), spaced evenly (each step within 10 % of the frame
    /// interval) and each time within 40 ms of the scene's; the span of n frames is (n − 1)
    /// frame intervals within one frame.
    @Test func framesWithoutTimestampsAreSpacedByTheirLearntInterval() {
        var random = SeededRandom(seed: 2026)
        for fps in Self.rates {
            var clock = CameraClock()
            let frames = Int(60 * fps)
            let realStep = 1e9 / fps
            var placed: [Int64] = []
            var worstOffset: Int64 = 0
            for i in 0..<frames {
                let truth = Self.start + Int64((Double(i) * realStep).rounded())
                let arrival = truth + Int64.random(in: -15_000_000...15_000_000, using: &random)
                let time = clock.place(cameraTicks: nil, arrivalMonotonic: arrival, arrivalWall: arrival)
                #expect(!time.jumped && !time.discontinuity)
                placed.append(time.monotonic)
                if i > Int(CameraClock.warmupFrames) { worstOffset = max(worstOffset, abs(time.monotonic - truth)) }
            }
            let steps = zip(placed, placed.dropFirst()).map { Double($1 - $0) }
            let uneven = steps.dropFirst(Int(CameraClock.warmupFrames)).filter { abs($0 - realStep) > realStep * 0.1 }
            #expect(uneven.isEmpty, "\(fps) fps: \(uneven.count) uneven steps, e.g. \(uneven.prefix(3))")
            let span = Double(placed.last! - placed.first!)
            #expect(abs(span - Double(frames - 1) * realStep) < realStep, "\(fps) fps: \(frames) frames span \(span / 1e9) s")
            #expect(worstOffset < 40_000_000, "\(fps) fps: \(worstOffset / 1_000_000) ms from the scene")
            #expect(clock.framesPerSecond.map { abs($0 - fps) < fps * 0.02 } == true, "\(fps) fps measured as \(String(describing: clock.framesPerSecond))")
        }
    }

    /// A camera that stops sending for 5 s: the next frame is placed at its arrival, so the
    /// pause stays a pause (the movie output ends the file there) instead of being squeezed.
    @Test(arguments: [false, true]) func aPauseStaysAPause(withTimestamps: Bool) {
        var clock = CameraClock()
        var placed: [Int64] = []
        for i in 0..<40 {
            let pause: Int64 = i >= 20 ? 5_000_000_000 : 0
            let arrival = Self.start + Int64(i) * 100_000_000 + pause
            let ticks: Int64? = withTimestamps ? Int64(i) * 9000 + pause / 1_000_000_000 * 90_000 : nil
            placed.append(clock.place(cameraTicks: ticks, arrivalMonotonic: arrival, arrivalWall: arrival).monotonic)
        }
        #expect(placed[20] - placed[19] >= 5_000_000_000, "\(placed[20] - placed[19])")
        #expect(zip(placed, placed.dropFirst()).allSatisfy { $1 > $0 })
    }

    /// A camera without timestamps that stalls (the network held its frames) and then sends the
    /// held frames at once: the burst is squeezed, never carried seconds ahead of its arrivals,
    /// so the file goes on without a cut, and the learnt rate is not bent by it. Before, the
    /// burst's frames were spaced at the full interval, ran more than 3 s ahead and ended the file.
    @Test(arguments: [30, 60]) func aBurstAfterAStallIsSqueezedNotCarriedAhead(held: Int) {
        var clock = CameraClock()
        var arrival = Self.start
        var placed: [CameraClock.Placed] = []
        var arrivals: [Int64] = []
        func frame() {
            placed.append(clock.place(cameraTicks: nil, arrivalMonotonic: arrival, arrivalWall: arrival))
            arrivals.append(arrival)
        }
        for _ in 0..<100 { frame(); arrival += 100_000_000 }
        // Nothing for the stall; then the held frames 50 µs apart (one read), then 10 fps again.
        arrival += Int64(held) * 100_000_000
        for _ in 0..<held { frame(); arrival += 50_000 }
        for _ in 0..<300 { frame(); arrival += 100_000_000 }
        #expect(!placed.contains { $0.discontinuity })
        #expect(zip(placed, placed.dropFirst()).allSatisfy { $1.monotonic > $0.monotonic })
        let lead = zip(placed, arrivals).map { $0.monotonic - $1 }.max()!
        #expect(lead <= 1_000_000_000, "placed up to \(lead / 1_000_000) ms ahead of its arrival")
        #expect(abs(clock.intervalNanos! - 100_000_000) <= 2_000_000, "\(clock.intervalNanos!)")
        // Back in step with the arrivals by the end.
        #expect(abs(placed.last!.monotonic - arrivals.last!) <= 20_000_000)
    }

    /// Repeated, backward and leaping camera times are jumps: said, and each starts a new run
    /// (the movie output begins a new file at the next keyframe), its frames spaced on from
    /// their arrivals: never a discontinuity that would end the file before the keyframe.
    @Test func repeatedBackwardAndLeapingTimesAreJumpsThatStartANewRun() {
        var clock = CameraClock()
        // 90 kHz ticks: 6000 = 1/15 s. Arrivals every 1/15 s.
        let ticks: [Int64] = [0, 6000, 12000, 18000, 18000, 6000, 12000, 12000 + 90000 * 10, 12000 + 90000 * 10 + 6000]
        var flags: [Bool] = []
        var placed: [Int64] = []
        for (i, t) in ticks.enumerated() {
            let arrival = Self.start + Int64(i) * 66_666_667
            let time = clock.place(cameraTicks: t, arrivalMonotonic: arrival, arrivalWall: arrival)
            #expect(!time.discontinuity, "frame \(i)")
            flags.append(time.jumped)
            placed.append(time.monotonic - Self.start)
        }
        #expect(flags == [false, false, false, false, true, true, false, true, false])
        #expect(zip(placed, placed.dropFirst()).allSatisfy { $1 > $0 }, "\(placed)")
        // Every frame within a few milliseconds of its arrival.
        for (i, p) in placed.enumerated() { #expect(abs(p - Int64(i) * 66_666_667) < 5_000_000, "frame \(i): \(p)") }
    }

    /// A camera whose timestamps step back by 0x7FFFFFFF after a keyframe, or forward by it for
    /// 44,000 pictures, trapped the clock's tick-to-nanosecond change (the whole process died).
    /// Every such step is a jump now; the times placed stay at the arrivals and keep rising.
    @Test func timestampsOfAnySizeAreJumps() {
        for step in [Int64(0x7FFF_FFFF), -0x7FFF_FFFF] {
            var clock = CameraClock()
            var unwrapper = RTPTimestampUnwrapper()
            var raw: UInt32 = 90_000
            var wrong = 0
            var last: Int64 = .min
            for i in 0..<44_000 {
                let now = Self.start + Int64(i) * 66_666_666
                let t = clock.place(cameraTicks: unwrapper.extend(raw), arrivalMonotonic: now, arrivalWall: now)
                // Three jumps start new runs; the fourth within a minute stops the camera's times
                // being used at all (not a file per picture).
                let jumpedRight = t.jumped == (1...CameraClock.jumpsBeforeDistrust).contains(i)
                let distrustedRight = t.distrusted == (i == CameraClock.jumpsBeforeDistrust + 1)
                if !jumpedRight || !distrustedRight || abs(t.monotonic - now) > 1_000_000 || t.monotonic <= last || t.discontinuity { wrong += 1 }
                last = t.monotonic
                raw = UInt32(truncatingIfNeeded: Int64(raw) &+ step)
            }
            #expect(wrong == 0, "step \(step)")
        }
        var extremes = CameraClock()
        for (i, ticks) in [Int64.max, .min, 0, .max / 2, .min + 1].enumerated() {
            let arrival = Self.start + Int64(i) * 1_000_000
            #expect(extremes.place(cameraTicks: ticks, arrivalMonotonic: arrival, arrivalWall: arrival).monotonic >= arrival - 1_000_000)
        }
    }

    /// A camera whose clock is set now and then (a jump back by an hour every 30 s) starts a new
    /// run at each; one whose clock jumps every second is given up on at the fourth jump in a
    /// minute: said once, and its frames are spaced by their arrivals from there, one run.
    @Test(arguments: [30, 1]) func jumpsStartRunsUntilTheyComeTooOften(everySeconds: Int) {
        var clock = CameraClock()
        var jumps: [Int] = [], distrusted: [Int] = []
        var last: Int64 = .min
        var ticks: Int64 = 0
        for i in 0..<(15 * 150) {
            let arrival = Self.start + Int64(i) * 66_666_667
            ticks += i > 0 && i % (15 * everySeconds) == 0 ? -90_000 * 3600 : 6000
            let t = clock.place(cameraTicks: ticks, arrivalMonotonic: arrival, arrivalWall: arrival)
            if t.jumped { jumps.append(i) }
            if t.distrusted { distrusted.append(i) }
            #expect(t.monotonic > last && !t.discontinuity && abs(t.monotonic - arrival) < 5_000_000, "frame \(i)")
            last = t.monotonic
        }
        if everySeconds == 30 {
            #expect(jumps == [450, 900, 1350, 1800] && distrusted.isEmpty, "\(jumps) \(distrusted)")
        } else {
            #expect(jumps == [15, 30, 45] && distrusted == [60], "\(jumps) \(distrusted)")
            #expect(clock.distrustsCameraTimes)
        }
    }

    /// The measured frame rate of a session (status line, API) follows its frames' times.
    @Test func theSessionsCounterMeasuresTheFrameRate() {
        let counter = SharedCounter()
        #expect(counter.measuredFrameRate == nil)
        for i in 0..<100 { counter.increment(at: Self.start + Int64(i) * 80_000_000) }
        #expect(counter.measuredFrameRate == 12.5)
    }
}
