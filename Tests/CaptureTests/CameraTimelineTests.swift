@testable import Capture
import Testing

/// A camera's timeline across sessions and runs (`CameraTimeline`, `TimelineShift`): a new
/// session whose placed times would begin at or before the camera's last recorded frame is
/// moved past it, and the shift wears off. Found by `Scripts/chaos` (seed 3): an MJPEG
/// camera's frames placed ahead of their arrival, a kill -9, a start 0.4 s later, and its next
/// file began 0.2 s before the last one ended.
@Suite struct CameraTimelineTests {
    static let start: Int64 = 1_795_000_000_000_000_000

    private func frames(from wall: Int64, count: Int, step: Int64, pool: FramePool) -> [CapturedFrame] {
        (0..<count).map { i in
            let frame = pool.take(capacity: 16)
            frame.setContents(byteCount: 0, format: .mjpeg, width: 0, height: 0, sequence: UInt64(i),
                              monotonicNanos: wall - Self.start + Int64(i) * step, wallNanos: wall + Int64(i) * step)
            return frame
        }
    }

    @Test func aSessionThatWouldStartBeforeTheLastRecordedFrameIsMovedPastItAndTheShiftWearsOff() {
        let timeline = CameraTimeline(), pool = FramePool()
        // The last run recorded up to 0.3 s after where the new one's first frame is placed.
        timeline.recorded(until: Self.start + 300_000_000)
        var shift = TimelineShift()
        let run = frames(from: Self.start, count: 10 * 120, step: 100_000_000, pool: pool)
        for frame in run { shift.place(frame, after: timeline) }
        #expect(run[0].wallNanos > Self.start + 300_000_000)
        #expect(zip(run, run.dropFirst()).allSatisfy { $1.wallNanos > $0.wallNanos && $1.monotonicNanos > $0.monotonicNanos })
        // 1 % of each 100 ms step: the 0.3 s are gone after 30 s of frames.
        #expect(run.last!.wallNanos == Self.start + Int64(run.count - 1) * 100_000_000)
        #expect(timeline.lastWallNanos == run.last!.wallNanos)
        for frame in run { frame.release() }
    }

    /// A session after the last recorded frame, or a wall clock stepped back by more than a
    /// placement can lie ahead (an hour): its times are its own.
    @Test(arguments: [Int64(-60_000_000_000), 3_600_000_000_000]) func timesAfterTheTimelineOrFarBeforeItAreLeftAlone(lastOffset: Int64) {
        let timeline = CameraTimeline(), pool = FramePool()
        timeline.recorded(until: Self.start + lastOffset)
        var shift = TimelineShift()
        let run = frames(from: Self.start, count: 20, step: 100_000_000, pool: pool)
        for frame in run { shift.place(frame, after: timeline) }
        #expect(run.enumerated().allSatisfy { $1.wallNanos == Self.start + Int64($0) * 100_000_000 })
        for frame in run { frame.release() }
    }
}
