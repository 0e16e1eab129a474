@testable import Capture
import Testing

/// Samples turned into events: motion that never stops is cut into events of `max_seconds`
/// that follow one another without a gap.
@Suite struct MotionEventTrackerTests {
    /// Five samples a second for `seconds`, all moving (`percent` of the picture).
    private func constantMotion(_ settings: MotionSettings, seconds: Double, percent: Double = 4) -> [MotionEventTracker.Change] {
        var tracker = MotionEventTracker(settings: settings)
        var changes: [MotionEventTracker.Change] = []
        for step in 0...Int(seconds * 5) {
            let sample = MotionDetector.Sample(seconds: Double(step) / 5, changedPercent: percent, noise: 1, isLightSwitch: false)
            if let change = tracker.add(sample) { changes.append(change) }
        }
        if let change = tracker.finish() { changes.append(change) }
        return changes
    }

    @Test func motionThatNeverStopsIsCutIntoEventsThatFollowOneAnother() {
        var settings = MotionSettings()
        settings.minSeconds = 0.5
        settings.maxSeconds = 10
        let changes = constantMotion(settings, seconds: 25)
        let ended = changes.compactMap { if case .ended(let s, let e, let p) = $0 { (s, e, p) } else { nil } }
        let started = changes.compactMap { if case .started(let s) = $0 { s } else { nil } }
        #expect(ended.map(\.0) == [0, 10, 20], "\(changes)")
        #expect(ended.map(\.1) == [10, 20, 25], "each cut event ends where the next begins: \(changes)")
        #expect(started == [0, 10, 20], "\(changes)")
        #expect(ended.allSatisfy { $0.2 == 4 })
    }

    @Test func withoutReachingTheMaximumAnEventIsOne() {
        var settings = MotionSettings()
        settings.maxSeconds = 300
        let changes = constantMotion(settings, seconds: 25)
        #expect(changes == [.started(seconds: 0), .ended(start: 0, end: 25, peakPercent: 4)])
    }
}
