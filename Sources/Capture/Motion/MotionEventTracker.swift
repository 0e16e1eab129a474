/// Turns the detector's samples into events: motion of at least `min_area_percent` for at least
/// `min_seconds` starts one (dated from when the motion began), quiet for `gap_seconds` ends it
/// (dated at the last motion), and its peak changed area is kept.
public struct MotionEventTracker: Sendable {
    public enum Change: Sendable, Equatable {
        case started(seconds: Double)
        case ended(start: Double, end: Double, peakPercent: Double)
    }

    public let settings: MotionSettings
    private var candidateStart: Double?
    private var open: (start: Double, lastMotion: Double, peak: Double)?

    public init(settings: MotionSettings) { self.settings = settings }

    public var isInEvent: Bool { open != nil }

    public mutating func add(_ sample: MotionDetector.Sample) -> Change? {
        let moving = !sample.isLightSwitch && sample.changedPercent >= settings.minAreaPercent
        if var event = open {
            if moving {
                event.lastMotion = sample.seconds
                event.peak = max(event.peak, sample.changedPercent)
                open = event
            } else if sample.seconds - event.lastMotion >= settings.gapSeconds {
                open = nil
                return .ended(start: event.start, end: event.lastMotion, peakPercent: event.peak)
            }
            return nil
        }
        guard moving else {
            candidateStart = nil
            return nil
        }
        let start = candidateStart ?? sample.seconds
        candidateStart = start
        guard sample.seconds - start >= settings.minSeconds else { return nil }
        candidateStart = nil
        open = (start, sample.seconds, sample.changedPercent)
        return .started(seconds: start)
    }

    /// Ends an open event when the stream ends.
    public mutating func finish() -> Change? {
        guard let event = open else { return nil }
        open = nil
        return .ended(start: event.start, end: event.lastMotion, peakPercent: event.peak)
    }
}
