import Foundation
import Synchronization

/// Dedicated threads for blocking work (SQLite, file-system walks, fsync, device enumeration,
/// opening a camera) behind async functions, so Swift's cooperative pool (two threads here) is
/// never blocked.
///
/// `width` 1 (the default): one thread, jobs run one at a time in the order they were given
/// (the storage keeper's writes rely on that order). Wider: up to `width` jobs at once, each
/// given to the lane with the fewest jobs waiting, for independent reads (the web server's,
/// sized to the index's read connections) so one slow job does not hold up the others.
///
/// Each lane is a serial Dispatch queue: Dispatch gives it a thread of its own while it has
/// work (the cooperative pool is a different set of threads), and none while it is idle.
public final class BlockingIO: Sendable {
    private let lanes: [DispatchQueue]
    /// Jobs given to each lane and not yet finished.
    private let waiting: Mutex<[Int]>

    /// `name` shows in a debugger's thread list ("vigil.storage", "vigil.devices"); `width`: 1...64.
    public init(_ name: String, width: Int = 1) {
        let width = min(max(1, width), 64)
        lanes = (0..<width).map { DispatchQueue(label: width == 1 ? name : "\(name).\($0)") }
        waiting = Mutex([Int](repeating: 0, count: width))
    }

    /// Runs `work` on a lane's thread and returns its result.
    public func run<T: Sendable>(_ work: @escaping @Sendable () -> T) async -> T {
        await withCheckedContinuation { continuation in
            enqueue { continuation.resume(returning: work()) }
        }
    }

    /// Runs throwing `work` on a lane's thread.
    public func run<T: Sendable>(_ work: @escaping @Sendable () throws -> T) async throws -> T {
        try await withCheckedThrowingContinuation { continuation in
            enqueue { continuation.resume(with: Result { try work() }) }
        }
    }

    /// Hands `work` over without waiting for it (indexing an event as it is emitted).
    public func enqueue(_ work: @escaping @Sendable () -> Void) {
        let lane = waiting.withLock { counts in
            let lane = counts.indices.min { counts[$0] < counts[$1] } ?? 0
            counts[lane] += 1
            return lane
        }
        lanes[lane].async { [self] in
            work()
            waiting.withLock { $0[lane] -= 1 }
        }
    }
}
