import Synchronization

/// This node's contact with the cluster's database: when it sent the last request the database
/// answered, and since when its requests have been answered without a break. Peers ask for it
/// (`GET /api/v1/cluster/witness`) when their own requests go unanswered, to tell a database
/// away for everyone (all keep recording) from a node cut off alone (it fences its cameras
/// before another node can take their leases).
public final class DatabaseContact: Sendable {
    private struct State {
        var reached: ContinuousClock.Instant?
        var connectedSince: ContinuousClock.Instant?
    }
    private let state = Mutex(State())

    public init() {}

    /// A request sent at `sent` was answered; the node has talked to the database without a
    /// break since `connectedSince`.
    func note(sentAt sent: ContinuousClock.Instant, connectedSince: ContinuousClock.Instant) {
        state.withLock { $0 = State(reached: max($0.reached ?? sent, sent), connectedSince: connectedSince) }
    }

    /// A request went unanswered: the unbroken run is over.
    func broken() { state.withLock { $0.connectedSince = nil } }

    /// Seconds since the last answered request was sent (nil: none yet).
    public var reachedSecondsAgo: Double? { state.withLock { $0.reached }.map { (ContinuousClock.now - $0).inSeconds } }

    /// Seconds the node has talked to the database without a break (nil: it is not now).
    public var connectedForSeconds: Double? { state.withLock { $0.connectedSince }.map { (ContinuousClock.now - $0).inSeconds } }
}
