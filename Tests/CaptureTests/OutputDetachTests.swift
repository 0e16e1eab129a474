@testable import Capture
import Foundation
import Synchronization
import Testing

/// An output whose `finish` has run (the session stopped it) must never see another frame: a
/// movie output would open a new segment that nobody finalizes (a stray `.partial`).
@Suite(.timeLimit(.minutes(1))) struct OutputDetachTests {
    /// Counts frames processed after `finish`.
    final class ProbeOutput: CaptureOutput, @unchecked Sendable {
        let finished = Atomic<Bool>(false)
        let lateFrames = Atomic<Int>(0)
        init() { super.init(name: "probe", queueCapacity: 2, dropsLateFrames: true) }
        override func process(_ frame: CapturedFrame, _ settings: ConnectionSettings) {
            if finished.load(ordering: .acquiring) { lateFrames.add(1, ordering: .relaxed) }
        }
        override func finish() { finished.store(true, ordering: .releasing) }
    }

    @Test func aFrameRacingDetachIsRefusedNotProcessedAfterFinish() async throws {
        let pool = FramePool()
        var late = 0
        for _ in 0..<300 {
            let output = ProbeOutput()
            output.attach(OutputContext(cameraID: "cam", events: EventBroadcaster(), frameRate: 30))
            let feeding = Atomic<Bool>(true)
            let fed = Atomic<Int>(0)
            // A capture thread that keeps delivering while the session detaches the output.
            let feeder = Thread {
                while feeding.load(ordering: .acquiring) {
                    let frame = pool.take(capacity: 16)
                    if !output.enqueue(frame, ConnectionSettings()) { frame.release() }
                    fed.add(1, ordering: .relaxed)
                }
            }
            feeder.start()
            while fed.load(ordering: .relaxed) < 3 { sched_yield() }
            output.detach()
            feeding.store(false, ordering: .releasing)
            while !feeder.isFinished { sched_yield() }
            late += output.lateFrames.load(ordering: .relaxed)
        }
        #expect(late == 0, "\(late) frame(s) processed after finish")
    }
}
