import Plumbing
import S3
import Capture
import Synchronization

/// `[archive] upload_rate`: all uploads together send at most this many bytes per second on
/// average. Each part or file waits, before it is sent, until the bytes sent so far fit the rate
/// (so a link shared with cameras is not filled by a backlog after an outage).
final class UploadRate: Sendable {
    private let bytesPerSecond: Int64
    /// When, in monotonic nanoseconds, the bytes taken so far will have been sent at the rate.
    private let paidUntil = Mutex<Int64>(0)

    init(bytesPerSecond: Int) { self.bytesPerSecond = Int64(max(1024, bytesPerSecond)) }

    /// Returns once `bytes` may be sent.
    func take(bytes: Int64) async {
        let now = SystemClocks.monotonicNanos()
        let wait = waitBefore(bytes: bytes, now: now)
        if wait > 0 { try? await Task.sleep(for: .nanoseconds(wait)) }
    }

    /// How long `bytes` taken at `now` (monotonic nanoseconds) wait before they may be sent.
    func waitBefore(bytes: Int64, now: Int64) -> Int64 {
        // Seconds first, then the remainder: bytes × 10⁹ would overflow beyond 9 GB.
        let cost = (bytes / bytesPerSecond).multipliedReportingOverflow(by: 1_000_000_000)
        let nanos = cost.overflow ? Int64.max / 4 : min(Int64.max / 4, cost.partialValue + bytes % bytesPerSecond * 1_000_000_000 / bytesPerSecond)
        let start = paidUntil.withLock { paid -> Int64 in
            let start = max(paid, now)
            paid = start.addingReportingOverflow(nanos).overflow ? Int64.max / 2 : start + nanos
            return start
        }
        return start - now
    }
}
