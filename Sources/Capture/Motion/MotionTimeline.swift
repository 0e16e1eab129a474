import Synchronization

/// Where a camera's motion output found motion, for the recording that keeps only those
/// minutes (`[[record]] mode = "motion"`): spans of wall-clock time, from the first to the last
/// moving picture of each stretch of an event. The motion output writes it on its thread; the
/// movie output reads it on its own, a few seconds behind (its pre-roll delay), when it decides
/// what to keep.
public final class MotionTimeline: Sendable {
    private let spans = Mutex<[(from: Int64, to: Int64)]>([])
    /// Motion this close to the span before it extends that span.
    private let joinNanos: Int64 = 1_000_000_000

    public init() {}

    /// Motion from `from` to `to`: one moving picture, or an event's start (dated from when its
    /// motion began) up to the picture that confirmed it.
    func noteMotion(from: Int64, to: Int64) {
        spans.withLock { spans in
            if let last = spans.last, from >= last.from, from - last.to <= joinNanos {
                spans[spans.count - 1].to = max(last.to, to)
            } else {
                spans.append((from, to))
                // A few minutes of spans are plenty for a recorder a few seconds behind.
                if spans.count > 512 { spans.removeFirst(256) }
            }
        }
    }

    /// Whether `wallNanos` lies within `pre` before to `post` after a span.
    func covers(_ wallNanos: Int64, pre: Int64, post: Int64) -> Bool {
        spans.withLock { spans in
            spans.reversed().contains { wallNanos >= $0.from - pre && wallNanos <= $0.to + post }
        }
    }
}
