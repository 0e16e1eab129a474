/// Turns the detector's samples into events: motion of at least `min_area_percent` for at least
/// `min_seconds` starts one (dated from when the motion began), quiet for `gap_seconds` ends it
/// (dated at the last motion), and its peak changed area is kept. Motion that never stops is cut
/// every `max_seconds`: the event ends there and the next one is dated from that instant, so a
/// tree in the wind makes reviewable pieces rather than one event that never ends.
public struct MotionEventTracker: Sendable {
    public enum Change: Sendable, Equatable {
        case started(seconds: Double)
        case ended(start: Double, end: Double, peakPercent: Double)
    }

    /// An event under way: when its motion began, its last motion, its peak changed area (percent).
    public struct OpenEvent: Sendable, Equatable {
        public var start: Double
        public var lastMotion: Double
        public var peak: Double
    }

    public let settings: MotionSettings
    private var candidateStart: Double?
    public private(set) var open: OpenEvent?

    public init(settings: MotionSettings) { self.settings = settings }

    public var isInEvent: Bool { open != nil }

    public mutating func add(_ sample: MotionDetector.Sample) -> Change? {
        let moving = !sample.isLightSwitch && sample.changedPercent >= settings.minAreaPercent
        if var event = open {
            if moving {
                event.lastMotion = sample.seconds
                event.peak = max(event.peak, sample.changedPercent)
                open = event
                if sample.seconds - event.start >= settings.maxSeconds {
                    // Cut: the motion goes on as the next event's candidate, from this instant.
                    open = nil
                    candidateStart = sample.seconds
                    return .ended(start: event.start, end: sample.seconds, peakPercent: event.peak)
                }
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
        open = OpenEvent(start: start, lastMotion: sample.seconds, peak: sample.changedPercent)
        return .started(seconds: start)
    }

    /// Ends an open event when the stream ends.
    public mutating func finish() -> Change? {
        candidateStart = nil
        guard let event = open else { return nil }
        open = nil
        return .ended(start: event.start, end: event.lastMotion, peakPercent: event.peak)
    }
}
