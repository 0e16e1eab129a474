import Foundation

/// A dedicated thread for blocking work (SQLite, file-system walks, fsync, device enumeration,
/// opening a camera) behind async functions, so Swift's cooperative pool (two threads here) is
/// never blocked. Its jobs run one at a time, in the order they were given.
///
/// It is a serial Dispatch queue: Dispatch gives it a thread of its own while it has work
/// (the cooperative pool is a different set of threads), and none while it is idle.
public final class BlockingIO: Sendable {
    private let queue: DispatchQueue

    /// `name` shows in a debugger's thread list ("vigil.storage", "vigil.devices").
    public init(_ name: String) {
        queue = DispatchQueue(label: name)
    }

    /// Runs `work` on the I/O thread and returns its result.
    public func run<T: Sendable>(_ work: @escaping @Sendable () -> T) async -> T {
        await withCheckedContinuation { continuation in
            queue.async { continuation.resume(returning: work()) }
        }
    }

    /// Runs throwing `work` on the I/O thread.
    public func run<T: Sendable>(_ work: @escaping @Sendable () throws -> T) async throws -> T {
        try await withCheckedThrowingContinuation { continuation in
            queue.async { continuation.resume(with: Result { try work() }) }
        }
    }

    /// Hands `work` over without waiting for it (indexing an event as it is emitted).
    public func enqueue(_ work: @escaping @Sendable () -> Void) {
        queue.async(execute: work)
    }
}
