import Metrics
import Synchronization

/// A limited number of places (live viewers, clips being built), each taken by a `Place` that
/// gives it back when it is dropped: on every way out of a route (its response sent, cancelled,
/// never started because the client left first, or an error) the place is freed, with no
/// `defer` to forget. `count` is shown as the gauge `gauge` when one is named.
public final class Places: Sendable {
    public let limit: Int
    private let current = Atomic<Int>(0)
    private let gauge: String?

    /// Shown as 0 from the start, not missing until the first place is taken.
    public init(limit: Int, gauge: String? = nil) {
        self.limit = limit
        self.gauge = gauge
        record(0)
    }

    public var count: Int { current.load(ordering: .relaxed) }

    /// A place if one is free; nil when all `limit` are taken.
    public func take() -> Place? {
        var n = current.load(ordering: .relaxed)
        while n < limit {
            let (exchanged, original) = current.compareExchange(expected: n, desired: n + 1, ordering: .relaxed)
            if exchanged {
                record(n + 1)
                return Place(self)
            }
            n = original
        }
        return nil
    }

    fileprivate func giveBack() { record(current.subtract(1, ordering: .relaxed).newValue) }

    private func record(_ value: Int) {
        if let gauge { Gauge(label: gauge).record(value) }
    }
}

/// One taken place; freed when the last reference to it goes.
public final class Place: Sendable {
    private let places: Places
    fileprivate init(_ places: Places) { self.places = places }
    deinit { places.giveBack() }
}
