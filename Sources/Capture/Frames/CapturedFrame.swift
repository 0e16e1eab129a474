import CheckedMath
import Glibc
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
    /// Whether a decoder can start here (always for raw and MJPEG frames).
    public internal(set) var isKeyframe = true
    /// How long after its decode time the frame is shown (pts − dts): above 0 only in streams
    /// with B-frames, whose packets arrive in decode order. Stream copy writes both times.
    public internal(set) var presentationDelayNanos: Int64 = 0
    /// For H.264/H.265 packets: the stream they belong to (codec, size, parameter sets); a new
    /// object means new parameters (a reconnect or a changed camera setting).
    public internal(set) var stream: StreamDescription?
    /// The camera's times broke before this frame so that it could not be placed after the one
    /// before (see `CameraClock`): a recording ends before it and the next starts at a keyframe.
    public internal(set) var followsDiscontinuity = false
    /// Which run of the camera's clock the frame is in: it changes where the camera's clock
    /// jumped (see `CameraClock`), and the movie output starts a new file at the next keyframe.
    public internal(set) var clockRun: UInt32 = 0
    /// Not a frame: the stream was lost here. Outputs close what they have open.
    public internal(set) var marksStreamLoss = false

    private let holders = Atomic<Int>(0)
    private unowned(unsafe) let pool: FramePool
    /// A driver buffer this frame shows instead of its own storage, and who gets it back when
    /// the last holder releases the frame (`lend`).
    private var lent: (bytes: UnsafeRawBufferPointer, lender: BufferLender, index: UInt32)?

    init(capacity: Int, pool: FramePool) {
        // The first buffer's size is Vigil's own (a format's image size, a network camera's first
        // guess); growing it for what a camera sends is `reserve`, which can fail without a trap.
        guard let storage = Self.map(capacity) else { fatalError("out of memory for a \(capacity)-byte frame") }
        self.storage = storage
        self.pool = pool
    }

    deinit { munmap(storage.baseAddress, storage.count) }

    /// The frame's bytes: its own storage, or the driver buffer it was lent.
    public var bytes: UnsafeRawBufferPointer {
        if let lent { return UnsafeRawBufferPointer(rebasing: lent.bytes[0..<byteCount]) }
        return UnsafeRawBufferPointer(rebasing: storage[0..<byteCount])
    }

    /// Shows a driver buffer as this frame's bytes instead of copying it (before `setContents`);
    /// `lender` gets the buffer back when the last holder releases the frame.
    func lend(_ bytes: UnsafeRawBufferPointer, from lender: BufferLender, index: UInt32) {
        lent = (bytes, lender, index)
    }

    /// Whether the bytes are a lent driver buffer.
    var isLent: Bool { lent != nil }

    /// Grows the buffer (only when a larger format starts; never per frame in steady state).
    /// False when the system has no memory for it: the frame keeps its buffer.
    @discardableResult
    func reserve(_ capacity: Int) -> Bool { reserve(capacity, keeping: 0) }

    /// Frame buffers are mapped pages of their own rather than heap blocks: a page counts in the
    /// process's memory only once written (an MJPEG frame uses a fraction of its worst-case
    /// capacity), and a buffer the pool lets go goes back to the system at once instead of
    /// staying in a malloc arena.
    private static func map(_ capacity: Int) -> UnsafeMutableRawBufferPointer? {
        let bytes = max(capacity, 1)
        let address = mmap(nil, bytes, PROT_READ | PROT_WRITE, MAP_PRIVATE | MAP_ANONYMOUS, -1, 0)
        guard let address, address != MAP_FAILED else { return nil }
        return UnsafeMutableRawBufferPointer(start: address, count: bytes)
    }

    /// Grows the buffer keeping its first `count` bytes (a frame assembled from several packets,
    /// e.g. a network camera's keyframe larger than any frame before it). The new buffer is a
    /// mapping like the first: `deinit` unmaps whatever buffer the frame holds.
    @discardableResult
    func reserve(_ capacity: Int, keeping count: Int) -> Bool {
        guard capacity > storage.count else { return true }
        // Doubled while assembling, so a frame of many packets is not copied once per packet.
        guard let larger = Self.map(count > 0 ? max(capacity, storage.count * 2) : capacity) else { return false }
        if count > 0 { larger.baseAddress!.copyMemory(from: storage.baseAddress!, byteCount: count) }
        munmap(storage.baseAddress, storage.count)
        storage = larger
        return true
    }

    /// Frame metadata set by a device backend after filling `storage`.
    public func setContents(
        byteCount: Int, format: PixelFormat, width: Int, height: Int,
        sequence: UInt64, monotonicNanos: Int64, wallNanos: Int64,
        keyframe: Bool = true, stream: StreamDescription? = nil, followsDiscontinuity: Bool = false,
        clockRun: UInt32 = 0, presentationDelayNanos: Int64 = 0
    ) {
        precondition(byteCount <= (lent?.bytes.count ?? storage.count))
        self.byteCount = byteCount
        self.format = format
        self.width = width
        self.height = height
        self.sequence = sequence
        self.monotonicNanos = monotonicNanos
        self.wallNanos = wallNanos
        self.isKeyframe = keyframe
        self.stream = stream
        self.followsDiscontinuity = followsDiscontinuity
        self.clockRun = clockRun
        self.presentationDelayNanos = presentationDelayNanos
        marksStreamLoss = false
    }

    /// Moves the frame's times later by `nanos` (capture thread, before the frame is handed out).
    func shiftTimes(by nanos: Int64) {
        monotonicNanos = monotonicNanos.adding(nanos) ?? monotonicNanos
        wallNanos = wallNanos.adding(nanos) ?? wallNanos
    }

    /// Turns this (empty) frame into the marker of a lost stream.
    func markStreamLoss(monotonicNanos: Int64, wallNanos: Int64) {
        setContents(byteCount: 0, format: format, width: 0, height: 0, sequence: 0, monotonicNanos: monotonicNanos, wallNanos: wallNanos)
        marksStreamLoss = true
    }

    func setHolders(_ count: Int) { holders.store(count, ordering: .releasing) }

    /// One more holder besides those a delivery counts (an output keeping the latest frame
    /// from the capture thread, in `accepts`); it calls `release()` when done.
    func retain() { holders.add(1, ordering: .relaxed) }

    /// Adds the holders of one delivery to the capture thread's own hold (and any `retain()`).
    func addHolders(_ count: Int) { holders.add(count, ordering: .releasing) }

    /// Called by each consumer when it is done with the frame.
    public func release() {
        if holders.subtract(1, ordering: .acquiringAndReleasing).newValue == 0 {
            if let lent {
                self.lent = nil
                lent.lender.giveBack(lent.index)
            }
            pool.recycle(self)
        }
    }
}

/// Recycles frame buffers between the capture thread and the outputs. It keeps as many frames
/// as were in use at once lately, not as many as ever were: after a burst (an encoder's queue
/// filled while the machine was busy) the spare frames are let go once a whole window of
/// `window` takes needed fewer, so memory follows need. Steady capture allocates nothing.
final class FramePool: Sendable {
    private struct State {
        var free: [CapturedFrame] = []
        /// Frames taken and not yet recycled.
        var inUse = 0
        /// The most frames in use at once in the current window.
        var windowPeak = 0
        var takesInWindow = 0
    }

    private let state = Mutex(State())
    private let window: Int

    /// `window`: takes between two decisions (150 is 5 s of a 30 fps camera).
    init(window: Int = 150) {
        self.window = window
        state.withLock { $0.free.reserveCapacity(64) }
    }

    /// Frames the pool holds: in use plus spare.
    var frameCount: Int { state.withLock { $0.inUse + $0.free.count } }

    func take(capacity: Int) -> CapturedFrame {
        var surplus: [CapturedFrame] = []
        let reused = state.withLock { s -> CapturedFrame? in
            let frame = s.free.popLast()
            s.inUse += 1
            s.windowPeak = max(s.windowPeak, s.inUse)
            s.takesInWindow += 1
            if s.takesInWindow >= window {
                // Keep spares for what this window needed at most; the rest is released below, unlocked.
                let spares = max(0, s.windowPeak - s.inUse)
                while s.free.count > spares { surplus.append(s.free.removeLast()) }
                s.takesInWindow = 0
                s.windowPeak = s.inUse
            }
            return frame
        }
        surplus.removeAll()
        let frame = reused ?? CapturedFrame(capacity: capacity, pool: self)
        frame.reserve(capacity)
        frame.setHolders(1)
        return frame
    }

    func recycle(_ frame: CapturedFrame) {
        state.withLock {
            $0.inUse -= 1
            $0.free.append(frame)
        }
    }
}
