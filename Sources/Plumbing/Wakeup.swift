import Synchronization

/// How a service waits: until someone has news for it (`signal()`), until the instant its next
/// piece of work is due, or until it is told to stop. Nothing is polled: a service with nothing
/// due sleeps until it is woken.
package final class Wakeup: Sendable {
    private struct State {
        var pending = false
        var stopped = false
        var waiter: CheckedContinuation<Void, Never>?
    }

    private let state = Mutex(State())

    package init() {}

    /// Wakes the waiter now (or the next wait, if nobody waits yet).
    package func signal() {
        state.withLock { s -> CheckedContinuation<Void, Never>? in
            defer { s.waiter = nil }
            if s.waiter == nil { s.pending = true }
            return s.waiter
        }?.resume()
    }

    /// Ends every wait, now and later: the service is shutting down.
    package func stop() {
        state.withLock { s -> CheckedContinuation<Void, Never>? in
            s.stopped = true
            defer { s.waiter = nil }
            return s.waiter
        }?.resume()
    }

    package var isStopped: Bool { state.withLock { $0.stopped } }

    /// Whether a wait is parked now: a test cancels only a waiter that really waits.
    var hasWaiter: Bool { state.withLock { $0.waiter != nil } }

    /// Returns when signalled, stopped or cancelled, or at `deadline` (monotonic nanoseconds;
    /// nil: no deadline).
    package func wait(untilMonotonic deadline: Int64?) async {
        let timer = deadline.map { deadline in
            Task { [self] in
                let nanos = deadline - SystemClocks.monotonicNanos()
                if nanos > 0 { try? await Task.sleep(for: .nanoseconds(nanos)) }
                if !Task.isCancelled { signal() }
            }
        }
        await withTaskCancellationHandler {
            await withCheckedContinuation { (waiter: CheckedContinuation<Void, Never>) in
                let now = state.withLock { s -> Bool in
                    if s.pending || s.stopped || Task.isCancelled {
                        s.pending = false
                        return true
                    }
                    s.waiter = waiter
                    return false
                }
                if now { waiter.resume() }
            }
        } onCancel: {
            signal()
        }
        timer?.cancel()
    }

    /// Waits `nanos` unless stopped (or cancelled) first; returns false once stopped.
    package func sleep(nanos: Int64) async -> Bool {
        let deadline = SystemClocks.monotonicNanos() + nanos
        while !isStopped && !Task.isCancelled && SystemClocks.monotonicNanos() < deadline {
            await wait(untilMonotonic: deadline)
        }
        return !isStopped && !Task.isCancelled
    }
}
