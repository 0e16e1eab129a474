/// One holder at a time for work that awaits, inside an actor. An actor is re-entered at every
/// `await`, so two calls of one async method run interleaved: two reloads (the file watcher
/// and SIGHUP for one save) each computed a camera's new outputs from the same old ones and
/// both attached theirs, leaving two writers on one camera. Work that changes what a camera
/// records takes a turn; the turn passes to waiters in the order they came.
///
/// Not `Sendable`: it lives in one actor and is used only on that actor's executor (the
/// `isolation` parameters keep the waiting on it).
final class AsyncTurn {
    private var isHeld = false
    private var waiters: [CheckedContinuation<Void, Never>] = []

    /// Someone holds the turn (or is about to get it from the one who does).
    var isTaken: Bool { isHeld }

    /// Takes the turn if it is free, without waiting.
    func take() -> Bool {
        guard !isHeld else { return false }
        isHeld = true
        return true
    }

    /// Waits for the turn.
    func wait(isolation: isolated (any Actor)? = #isolation) async {
        guard !take() else { return }
        await withCheckedContinuation(isolation: isolation) { waiters.append($0) }
    }

    /// Gives the turn to the next waiter, or frees it.
    func give() {
        precondition(isHeld, "AsyncTurn given back without being held")
        if waiters.isEmpty { isHeld = false } else { waiters.removeFirst().resume() }
    }

    /// Runs `body` in the turn: waits for it, and gives it back however `body` ends.
    func run<T>(isolation: isolated (any Actor)? = #isolation, _ body: () async throws -> T) async rethrows -> T {
        await wait(isolation: isolation)
        defer { give() }
        return try await body()
    }
}
