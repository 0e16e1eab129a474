import Foundation

/// Runs blocking work (device discovery, opening a camera) on a plain thread, so Swift's
/// cooperative pool is never blocked.
func onThread<T: Sendable>(_ work: @escaping @Sendable () -> T) async -> T {
    await withCheckedContinuation { continuation in
        Thread.detachNewThread { continuation.resume(returning: work()) }
    }
}
