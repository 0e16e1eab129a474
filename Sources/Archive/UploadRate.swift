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
        let cost = bytes.multipliedReportingOverflow(by: 1_000_000_000).overflow ? Int64.max / 4 : bytes * 1_000_000_000 / bytesPerSecond
        let start = paidUntil.withLock { paid -> Int64 in
            let start = max(paid, now)
            paid = start + cost
            return start
        }
        if start > now { try? await Task.sleep(for: .nanoseconds(start - now)) }
    }
}
