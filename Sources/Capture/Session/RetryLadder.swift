/// How long to wait before the next attempt to open a camera that failed: about 1 s five
/// times, 5 s five times, 10 s ten times, then every 60 s (go2rtc's ladder). A connect event
/// resets it.
public struct RetryLadder: Sendable, Equatable {
    public private(set) var failures = 0

    public init() {}

    public var nextDelaySeconds: Double {
        switch failures {
        case ..<5: return 1
        case ..<10: return 5
        case ..<20: return 10
        default: return 60
        }
    }

    public mutating func recordFailure() { failures += 1 }
    public mutating func reset() { failures = 0 }
}
