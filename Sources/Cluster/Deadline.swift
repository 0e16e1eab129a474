import Synchronization

/// Waits for an async call at most `limit`: postgres-nio's queries take no timeout, and a query to
/// a server that stopped answering (a frozen machine, a dropped network) waits for ever. On the
/// deadline the call is cancelled and left to end by itself; the caller gets
/// `CatalogError.unavailable` at once and goes on (a heartbeat tries again, a command exits).
public func withDeadline<T: Sendable>(
    _ limit: Duration, _ what: String, _ operation: @escaping @Sendable () async throws -> T
) async throws -> T {
    let waiting = Waiting<T>()
    return try await withCheckedThrowingContinuation { continuation in
        waiting.caller.withLock { $0 = continuation }
        let work = Task {
            let result: Result<T, any Error>
            do { result = .success(try await operation()) } catch { result = .failure(error) }
            waiting.caller.withLock { $0.take() }?.resume(with: result)
        }
        Task {
            try? await Task.sleep(for: limit)
            guard let late = waiting.caller.withLock({ $0.take() }) else { return }
            work.cancel()
            late.resume(throwing: CatalogError.unavailable("\(what) got no answer within \(limit)"))
        }
    }
}

/// The caller of `withDeadline`, resumed once: by the call's end or by the deadline, whichever comes first.
private final class Waiting<T: Sendable>: Sendable {
    let caller = Mutex<CheckedContinuation<T, any Error>?>(nil)
}

extension Duration {
    /// The span in seconds, for logs and for waits that take a `Double`.
    var inSeconds: Double { Double(components.seconds) + Double(components.attoseconds) / 1e18 }
    /// Whole nanoseconds, clamped to ±a century (a wait's length, added to a monotonic instant).
    var inNanoseconds: Int64 {
        let century: Int64 = 100 * 365 * 86_400
        return max(-century, min(century, components.seconds)) * 1_000_000_000 + components.attoseconds / 1_000_000_000
    }
}
