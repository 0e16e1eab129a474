import CheckedMath
import Foundation
import Media
import Logging
import Plumbing
import Synchronization
import SystemPackage

/// A session's frame count, last frame time and measured frame rate, written by its capture
/// thread (the only writer) and read by status displays on other threads.
final class SharedCounter: Sendable {
    private let value = Atomic<Int>(0)
    private let lastMonotonic = Atomic<Int64>(0)
    private let intervalNanos = Atomic<Int64>(0)
    /// Counts a frame captured at `monotonicNanos` (for "how long since the last frame") and
    /// learns the frame interval from its distance to the one before.
    func increment(at monotonicNanos: Int64) {
        let previous = lastMonotonic.load(ordering: .relaxed)
        if previous != 0, let step = monotonicNanos.subtracting(previous) {
            var interval = FrameInterval(storedNanos: intervalNanos.load(ordering: .relaxed))
            interval.learn(step)
            intervalNanos.store(interval.nanos ?? 0, ordering: .relaxed)
        }
        lastMonotonic.store(monotonicNanos, ordering: .relaxed)
        value.add(1, ordering: .relaxed)
    }
    var current: Int { value.load(ordering: .relaxed) }
    /// When the last frame was captured (monotonic); nil before the first.
    var lastNanos: Int64? {
        let n = lastMonotonic.load(ordering: .relaxed)
        return n == 0 ? nil : n
    }
    /// Frames per second, measured from the frames' times (nil before two frames).
    var measuredFrameRate: Double? { FrameInterval(storedNanos: intervalNanos.load(ordering: .relaxed)).framesPerSecond }
}

/// The one thread that reads a session's camera and fans frames out to its outputs.
/// Nothing here waits on an output (unless that output asked not to drop frames).
/// @unchecked: the stream, format and corruption counters are touched only on the capture thread; shared state is in Mutex/Atomic.
final class CaptureThread: @unchecked Sendable {
    let device: CaptureDevice
    let connections: Mutex<[CaptureConnection]>
    private var stream: any CaptureStream
    private var format: DeviceFormat
    private var frameRate: Double
    private var controls: [ControlSetting]
    private let events: EventBroadcaster
    private let frameCounter: SharedCounter
    private let pool = FramePool()
    private let stopRequested = Atomic<Bool>(false)
    /// The current stream's abort handle, used by `stop()` from another thread.
    private let abortHandle: Mutex<(any AbortHandle)?>
    private let endedSignal = DispatchSemaphore(value: 0)
    private let endedFlag = Atomic<Bool>(false)
    private let onEnd: @Sendable () -> Void
    private let logger = Logger(label: "vigil.capture")

    /// A change requested by a commit while running, carried out by the capture thread (the
    /// only thread that touches the stream): a new format, new control values, or both.
    private final class FormatSwitch: Sendable {
        let format: DeviceFormat?
        let frameRate: Double
        let controls: [ControlSetting]?
        /// Set by the capture thread before `done` is signalled, read by the requester after.
        let outcome = Mutex<CaptureError?>(nil)
        let done = DispatchSemaphore(value: 0)
        init(format: DeviceFormat?, frameRate: Double, controls: [ControlSetting]?) {
            self.format = format
            self.frameRate = frameRate
            self.controls = controls
        }
    }
    /// The request waiting for the capture thread, and whether the thread still takes any
    /// (once it has ended, a request would wait forever).
    private let pendingSwitch = Mutex<(request: FormatSwitch?, accepting: Bool)>((nil, true))
    private var corruptFrames = 0
    private var lastCorruptReason = ""
    /// The stream reported a loss it has not recovered from yet (`ReadResult.interrupted`).
    private var isInterrupted = false
    /// Reused for every frame so that fan-out allocates nothing.
    private var takers: [CaptureConnection] = []
    /// A cluster lease's fence on this camera (nil: none), and the frames it dropped since it closed.
    private let fence: CaptureFence?
    private var fencedFrames: Int?
    /// The camera's timeline across sessions, and this session's shift past it (nil: none kept).
    private let timeline: CameraTimeline?
    private var timelineShift = TimelineShift()

    /// How long one read may wait; also how quickly a stop or format switch is noticed.
    private static let readTimeoutNanos: Int64 = 200_000_000

    init(
        device: CaptureDevice, stream: any CaptureStream, format: DeviceFormat, frameRate: Double,
        controls: [ControlSetting], connections: [CaptureConnection], events: EventBroadcaster, frameCounter: SharedCounter,
        fence: CaptureFence? = nil, timeline: CameraTimeline? = nil, onEnd: @escaping @Sendable () -> Void
    ) {
        self.fence = fence
        self.timeline = timeline
        self.device = device
        self.stream = stream
        self.format = format
        self.frameRate = frameRate
        self.controls = controls
        self.connections = Mutex(connections)
        self.events = events
        self.frameCounter = frameCounter
        self.onEnd = onEnd
        abortHandle = Mutex(stream.abortHandle)
        takers.reserveCapacity(16)
    }

    var hasEnded: Bool { endedFlag.load(ordering: .acquiring) }

    func start() {
        let thread = Thread { [self] in
            FFmpegLog.tagThread(camera: device.id)
            run()
        }
        thread.name = "vigil-capture-\(device.id)"
        thread.qualityOfService = .userInteractive
        thread.start()
    }

    func stop() {
        stopRequested.store(true, ordering: .releasing)
        abortHandle.withLock { $0 }?.abort()
        waitUntilEnded()
    }

    func waitUntilEnded() {
        endedSignal.wait()
        endedSignal.signal()
    }

    /// Reopens the camera with a new format and/or sets controls; on refusal keeps (or reopens)
    /// the old format and throws.
    func reconfigure(format: DeviceFormat?, frameRate: Double, controls: [ControlSetting]?) throws(CaptureError) {
        let request = FormatSwitch(format: format, frameRate: frameRate, controls: controls)
        let accepted = pendingSwitch.withLock { p -> Bool in
            guard p.accepting else { return false }
            p.request = request
            return true
        }
        guard accepted else { throw .stopped(camera: device.id) }
        request.done.wait()
        if let error = request.outcome.withLock({ $0 }) { throw error }
    }

    private func run() {
        var lastDropReport = SystemClocks.monotonicNanos()
        defer {
            // Corrupt frames since the last report are counted too, not lost with the session.
            reportCorruptFrames()
            if let dropped = fencedFrames {
                logger.notice("camera \(device.id): stopped while fenced, after \(dropped) frame(s) dropped")
            }
            stream.close()
            // A commit waiting for a switch must not hang if capture ended.
            if let request = pendingSwitch.withLock({ p -> FormatSwitch? in
                defer { p = (nil, false) }
                return p.request
            }) {
                request.outcome.withLock { $0 = .stopped(camera: device.id) }
                request.done.signal()
            }
            endedFlag.store(true, ordering: .releasing)
            endedSignal.signal()
            onEnd()
        }
        while !stopRequested.load(ordering: .acquiring) {
            if let request = pendingSwitch.withLock({ p -> FormatSwitch? in
                defer { p.request = nil }
                return p.request
            }) {
                performSwitch(request)
            }
            let frame = pool.take(capacity: stream.maximumFrameBytes)
            let result: ReadResult
            do {
                result = try stream.readFrame(into: frame, timeoutNanos: Self.readTimeoutNanos)
            } catch CaptureError.endOfFile {
                frame.release()
                return
            } catch CaptureError.disconnected(let reason, let cause) {
                frame.release()
                logger.warning("camera \(device.id) disconnected: \(reason)")
                events.emit(.interrupted(camera: device.id, cause: cause, reason: reason))
                return
            } catch {
                frame.release()
                logger.error("camera \(device.id) failed: \(error)")
                events.emit(.runtimeError(camera: device.id, message: "\(error)", errno: (error as? CaptureError)?.errno))
                return
            }
            switch result {
            case .timeout:
                frame.release()
            case .frame:
                if let timeline { timelineShift.place(frame, after: timeline) }
                frameCounter.increment(at: frame.monotonicNanos)
                if let fence { passFence(fence, frame) } else { deliver(frame) }
            case .corrupt(let reason):
                frame.release()
                corruptFrames += 1
                lastCorruptReason = reason
            case .interrupted(let cause, let reason):
                logger.warning("camera \(device.id) interrupted: \(reason); reconnecting")
                isInterrupted = true
                events.emit(.interrupted(camera: device.id, cause: cause, reason: reason))
                announceStreamLoss(frame)
            case .resumed:
                frame.release()
                // Also sent at a session's first frame, which is no return.
                if isInterrupted { logger.notice("camera \(device.id) is back") }
                isInterrupted = false
                events.emit(.interruptionEnded(camera: device.id))
            }
            let now = SystemClocks.monotonicNanos()
            if now - lastDropReport >= 1_000_000_000 {
                lastDropReport = now
                for c in connections.withLock({ $0 }) { c.output.reportDrops() }
                reportCorruptFrames()
            }
        }
    }

    /// Delivers `frame` while the fence is open. The first frame after it closes ends the open
    /// files as a lost stream does (the next file starts at a keyframe once it opens again);
    /// the frames after are dropped, and counted when it opens.
    private func passFence(_ fence: CaptureFence, _ frame: CapturedFrame) {
        if !fence.blocksNow {
            if let dropped = fencedFrames {
                logger.notice("camera \(device.id): the lease is this node's again; recording resumes after \(dropped) frame(s) dropped while fenced")
                fencedFrames = nil
            }
            deliver(frame)
        } else if let dropped = fencedFrames {
            fencedFrames = dropped &+ 1
            frame.release()
        } else {
            logger.warning("camera \(device.id): fenced, its lease may now be another node's: files ended, frames dropped until the lease is renewed")
            fencedFrames = 0
            announceStreamLoss(frame)
        }
    }

    /// Hands a stream-loss marker (made from `frame`) to every connected output, in order
    /// with the frames before it, so open segments end where the stream ended.
    private func announceStreamLoss(_ frame: CapturedFrame) {
        frame.markStreamLoss(monotonicNanos: SystemClocks.monotonicNanos(), wallNanos: SystemClocks.wallNanos())
        takers.removeAll(keepingCapacity: true)
        connections.withLock { current in takers.append(contentsOf: current) }
        frame.setHolders(takers.count + 1)
        for c in takers where !c.output.enqueueStreamLoss(frame, c.settings) { frame.release() }
        takers.removeAll(keepingCapacity: true)
        frame.release()
    }

    private func reportCorruptFrames() {
        guard corruptFrames > 0 else { return }
        logger.warning("camera \(device.id): dropped \(corruptFrames) corrupt frame(s): \(lastCorruptReason)")
        events.emit(.droppedFrames(camera: device.id, output: "camera (corrupt: \(lastCorruptReason))", count: corruptFrames))
        corruptFrames = 0
    }

    /// Hands the frame to every enabled output that wants it; the last holder recycles it.
    private func deliver(_ frame: CapturedFrame) {
        takers.removeAll(keepingCapacity: true)
        connections.withLock { current in
            for c in current where c.settings.isEnabled && c.output.accepts(frame) { takers.append(c) }
        }
        // One hold per taker besides the capture thread's own (set by the pool, released at the
        // end) and any taken by an output's `accepts`.
        frame.addHolders(takers.count)
        for c in takers where !c.output.enqueue(frame, c.settings) { frame.release() }
        takers.removeAll(keepingCapacity: true)
        frame.release()
    }

    private func performSwitch(_ request: FormatSwitch) {
        defer { request.done.signal() }
        if let newFormat = request.format {
            stream.close()
            do {
                stream = try device.backend.open(format: newFormat, frameRate: request.frameRate)
                abortHandle.withLock { $0 = stream.abortHandle }
                format = newFormat
                frameRate = request.frameRate
            } catch {
                request.outcome.withLock { $0 = .deviceFailed(camera: device.id, reason: "refused \(newFormat): \(error)", errno: (error as? CaptureError)?.errno) }
                do {
                    stream = try device.backend.open(format: format, frameRate: frameRate)
                    abortHandle.withLock { $0 = stream.abortHandle }
                } catch {
                    events.emit(.runtimeError(camera: device.id, message: "could not reopen \(format): \(error)", errno: (error as? CaptureError)?.errno))
                    stopRequested.store(true, ordering: .releasing)
                    return
                }
            }
            // A reopened camera starts from its defaults: set the controls again.
            controls = request.controls ?? controls
            if !controls.isEmpty { try? stream.apply(controls: controls) }
            return
        }
        if let newControls = request.controls {
            do {
                try stream.apply(controls: newControls)
                controls = newControls
            } catch {
                request.outcome.withLock { $0 = .deviceFailed(camera: device.id, reason: "refused the control values: \(error)", errno: (error as? CaptureError)?.errno) }
            }
        }
    }
}
