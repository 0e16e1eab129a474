import Foundation
import Plumbing

/// Spaces a live camera's frames at its frame rate in real time (synthetic and file cameras):
/// frame k is due at start + k·interval, so a late frame never shifts the ones after it.
struct FramePacer {
    private let startNanos = SystemClocks.monotonicNanos()
    private let intervalNanos: Int64
    private(set) var sequence: UInt64 = 0

    init(frameRate: Double) {
        intervalNanos = Int64(1_000_000_000 / frameRate)
    }

    /// Waits until the next frame is due, or `timeoutNanos` if that comes first; true when due.
    mutating func waitForNextFrame(timeoutNanos: Int64) -> Bool {
        let due = startNanos + Int64(sequence) * intervalNanos
        let now = SystemClocks.monotonicNanos()
        if due > now + timeoutNanos {
            SystemClocks.sleep(untilMonotonic: now + timeoutNanos)
            return false
        }
        SystemClocks.sleep(untilMonotonic: due)
        sequence += 1
        return true
    }
}
