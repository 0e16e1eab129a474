import Logging
import Synchronization

/// Where a session's frames go (`AVCaptureOutput`). Each output has its own worker thread and
/// bounded queue: a slow output drops its own late frames and never slows the others.
///
/// Subclasses override `accepts` (capture thread: cheap, decides whether to queue a frame at
/// all), `process` (worker thread) and `finish` (worker thread, when the session stops).
/// @unchecked: a subclass's own state is touched only on its worker thread (`process`, `finish`).
public class CaptureOutput: @unchecked Sendable, CustomStringConvertible {
    public let name: String
    /// nil: sized by need when the output is attached (`QueueSizing`).
    private let requestedQueueCapacity: Int?
    private let dropsLateFrames: Bool
    /// Its queue holds seconds of compressed frames, not a fraction of one (`QueueSizing`):
    /// an output that must not lose a frame when a camera sends a stall's frames at once.
    private let absorbsBursts: Bool
    private let counters = Mutex<(received: Int, dropped: Int, unreported: Int)>((0, 0, 0))
    private let state = Mutex<(worker: OutputWorker?, context: OutputContext?, capacity: QueueSizing.Budget)>((nil, nil, .init(frames: 0)))
    var logger: Logger

    init(name: String, queueCapacity: Int?, dropsLateFrames: Bool, absorbsBursts: Bool = false) {
        self.name = name
        requestedQueueCapacity = queueCapacity
        self.dropsLateFrames = dropsLateFrames
        self.absorbsBursts = absorbsBursts
        logger = Logger(label: "vigil.output")
    }

    public var description: String { name }

    /// Frames this output processed.
    public var receivedFrameCount: Int { counters.withLock { $0.received } }
    /// Frames this output dropped because it fell behind.
    public var droppedFrameCount: Int { counters.withLock { $0.dropped } }

    // MARK: - For subclasses

    /// Capture thread: whether this frame should be queued at all. Must be cheap.
    func accepts(_ frame: CapturedFrame) -> Bool { true }

    /// Worker thread: handle one frame.
    func process(_ frame: CapturedFrame, _ settings: ConnectionSettings) {}

    /// Worker thread: the session stopped; close files and drain encoders.
    func finish() {}

    /// Worker thread: the camera's stream was lost (it is being reconnected); close what
    /// cannot continue across the gap.
    func streamLost() {}

    /// Validates the output against the format the session is about to use.
    func validate(format: DeviceFormat, settings: ConnectionSettings) throws(CaptureError) {}

    /// The session this output is attached to, for events and naming.
    var context: OutputContext? { state.withLock { $0.context } }

    func emit(_ event: SessionEvent) { context?.events.emit(event) }

    // MARK: - Used by the session

    func attach(_ context: OutputContext) {
        state.withLock { state in
            state.context = context
            if state.worker == nil {
                state.capacity = requestedQueueCapacity.map { .init(frames: $0) } ?? QueueSizing.budget(
                    frameRate: context.frameRate, frameBytes: context.rawFrameBytes, interFrameCoded: context.interFrameCoded,
                    absorbsBursts: absorbsBursts)
                state.worker = OutputWorker(
                    name: "vigil-\(context.cameraID)-\(name)", camera: context.cameraID, budget: state.capacity,
                    dropsLateFrames: dropsLateFrames
                ) { [unowned self] frame, settings in
                    if frame.marksStreamLoss {
                        streamLost()
                        return
                    }
                    counters.withLock { $0.received += 1 }
                    process(frame, settings)
                }
            }
        }
        logger[metadataKey: "camera"] = "\(context.cameraID)"
    }

    /// Capture thread: hands a frame to the worker; false if it was dropped as late.
    func enqueue(_ frame: CapturedFrame, _ settings: ConnectionSettings) -> Bool {
        guard let worker = state.withLock({ $0.worker }) else { return false }
        switch worker.enqueue(frame, settings) {
        case .queued:
            return true
        case .closed:
            return false
        case .dropped:
            counters.withLock {
                $0.dropped += 1
                $0.unreported += 1
            }
            return false
        }
    }

    /// Capture thread: tells the worker, in order with the frames, that the stream was lost.
    /// Waits for room in the queue (once per loss) so the marker is never dropped.
    func enqueueStreamLoss(_ marker: CapturedFrame, _ settings: ConnectionSettings) -> Bool {
        guard let worker = state.withLock({ $0.worker }) else { return false }
        return worker.enqueue(marker, settings, waitsForRoom: true) == .queued
    }

    /// Reports drops since the last call (the session calls this about once a second).
    func reportDrops() {
        let n = counters.withLock { c -> Int in
            defer { c.unreported = 0 }
            return c.unreported
        }
        if n > 0, let context { context.events.emit(.droppedFrames(camera: context.cameraID, output: name, count: n)) }
    }

    /// Drains the queue, runs `finish` on the worker and ends its thread.
    func detach() {
        guard let worker = state.withLock({ s -> OutputWorker? in
            defer { s.worker = nil }
            return s.worker
        }) else { return }
        worker.shutdown { [self] in finish() }
        reportDrops()
    }

    /// Whether a running session feeds this output.
    var isAttached: Bool { state.withLock { $0.worker != nil } }

    /// Frames that may wait in this output's queue (known once attached).
    var queueCapacity: Int { state.withLock { $0.capacity.frames } }

    /// Bytes of frames that may wait in this output's queue (known once attached).
    var queueByteBudget: Int { state.withLock { $0.capacity.bytes } }
}

/// How much an output's queue holds when its owner does not say. A queue absorbs the moments
/// its worker cannot run (a busy machine, a segment's fsync) and, for a recording, a network
/// camera's burst: frames a stalled network held back, sent at once when it clears. A deeper
/// queue costs memory only while it is full: the frames it held go back to the system when
/// the capture pool trims them.
///
/// - Raw frames (a USB camera: each a whole picture, 1.8 MB at 720p YUYV, and a driver that
///   drops frames itself rather than bursting): a quarter of a second, at most 12 MiB.
/// - Compressed frames (MJPEG, H.264, H.265: only as large as each image): a recording's
///   queue (`absorbsBursts`) holds `burstSeconds` of frames, at most `burstByteBudget` bytes, so
///   a stall of several seconds followed by its burst loses nothing; H.264/H.265 elsewhere 2 s
///   (a dropped frame spoils every frame up to the next keyframe); other outputs a quarter second.
/// Never fewer than 2 frames.
enum QueueSizing {
    struct Budget: Equatable {
        var frames: Int
        var bytes = Int.max
    }

    static let seconds = 0.25
    static let rawFrameBudget = 12 << 20
    static let interFrameCodedSeconds = 2.0
    static let burstSeconds = 10.0
    static let burstByteBudget = 64 << 20

    /// `frameBytes`: size of one raw frame; 0 for compressed frames.
    static func budget(frameRate: Double, frameBytes: Int, interFrameCoded: Bool = false, absorbsBursts: Bool = false) -> Budget {
        // A camera's rate, bounded before it sizes anything (NaN: 1, infinity: 1000).
        let fps = frameRate.isNaN ? 1 : min(max(frameRate, 1), 1000)
        if frameBytes > 0 {
            return Budget(frames: max(2, min(Int((fps * seconds).rounded(.up)), rawFrameBudget / frameBytes)))
        }
        if absorbsBursts { return Budget(frames: max(2, Int((fps * burstSeconds).rounded(.up))), bytes: burstByteBudget) }
        return Budget(frames: max(2, Int((fps * (interFrameCoded ? interFrameCodedSeconds : seconds)).rounded(.up))))
    }
}

/// What an output knows of the session it is attached to.
struct OutputContext: Sendable {
    let cameraID: String
    let events: EventBroadcaster
    /// The camera's nominal frame rate (encoders use it for rate control).
    let frameRate: Double
    /// Bytes of one raw frame; 0 when frames are compressed (queue sizing).
    var rawFrameBytes = 0
    /// Frames depend on earlier ones (H.264/H.265): queues are sized to drop none.
    var interFrameCoded = false
}
