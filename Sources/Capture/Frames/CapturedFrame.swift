import Media
import Synchronization

/// One frame as the camera delivered it: raw pixels or a compressed image, with its
/// timestamps. Frames come from a `FramePool` and go back to it when every output that took
/// the frame has released it, so steady-state capture allocates nothing.
/// @unchecked: its bytes are written by the capture thread only before the frame is handed out, then only read until every holder released it.
public final class CapturedFrame: @unchecked Sendable {
    public private(set) var storage: UnsafeMutableRawBufferPointer
    public internal(set) var byteCount = 0
    public internal(set) var format: PixelFormat = .yuyv422
    public internal(set) var width = 0
    public internal(set) var height = 0
    /// The device's frame counter (V4L2 `sequence`); gaps mean the camera dropped frames.
    public internal(set) var sequence: UInt64 = 0
    /// Capture time on the monotonic clock, in nanoseconds.
    public internal(set) var monotonicNanos: Int64 = 0
    /// Capture time on the wall clock (Unix epoch), in nanoseconds.
    public internal(set) var wallNanos: Int64 = 0

    private let holders = Atomic<Int>(0)
    private unowned(unsafe) let pool: FramePool

    init(capacity: Int, pool: FramePool) {
        storage = .allocate(byteCount: max(capacity, 1), alignment: 64)
        self.pool = pool
    }

    deinit { storage.deallocate() }

    /// The frame's bytes.
    public var bytes: UnsafeRawBufferPointer { UnsafeRawBufferPointer(rebasing: storage[0..<byteCount]) }

    /// Grows the buffer (only when a larger format starts; never per frame in steady state).
    func reserve(_ capacity: Int) {
        guard capacity > storage.count else { return }
        storage.deallocate()
        storage = .allocate(byteCount: capacity, alignment: 64)
    }

    /// Frame metadata set by a device backend after filling `storage`.
    public func setContents(
        byteCount: Int, format: PixelFormat, width: Int, height: Int,
        sequence: UInt64, monotonicNanos: Int64, wallNanos: Int64
    ) {
        precondition(byteCount <= storage.count)
        self.byteCount = byteCount
        self.format = format
        self.width = width
        self.height = height
        self.sequence = sequence
        self.monotonicNanos = monotonicNanos
        self.wallNanos = wallNanos
    }

    func setHolders(_ count: Int) { holders.store(count, ordering: .releasing) }

    /// Called by each consumer when it is done with the frame.
    public func release() {
        if holders.subtract(1, ordering: .acquiringAndReleasing).newValue == 0 {
            pool.recycle(self)
        }
    }
}

/// Recycles frame buffers between the capture thread and the outputs.
final class FramePool: Sendable {
    private let free = Mutex<[CapturedFrame]>([])

    init() {
        free.withLock { $0.reserveCapacity(64) }
    }

    func take(capacity: Int) -> CapturedFrame {
        let frame = free.withLock { $0.popLast() } ?? CapturedFrame(capacity: capacity, pool: self)
        frame.reserve(capacity)
        frame.setHolders(1)
        return frame
    }

    func recycle(_ frame: CapturedFrame) {
        free.withLock { $0.append(frame) }
    }
}
