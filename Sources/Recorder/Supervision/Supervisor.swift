import Capture
import Foundation
import Logging
import Plumbing
import ServiceLifecycle

/// Keeps every planned camera recording: one capture session per camera while it is present.
/// When a camera disappears its session is interrupted (open segments are finalized) and the
/// camera waits; when it comes back (on any node) it is reattached with the same outputs into
/// a new segment. A camera that fails to open is retried on a ladder, reset by a connect event or
/// a session that delivered frames. A watchdog restarts a session that delivers no frame for
/// `watchdogSeconds`. A network camera's session is kept through an outage: its stream
/// reconnects on the camera's own ladder and says when frames flow again. A camera with a
/// schedule is opened shortly before its first job becomes active and closed when none is.
/// Plans can be added, changed and removed while it runs (configuration reload).
///
/// Nothing here polls: the supervisor sleeps until a device event, a session event or a plan
/// change wakes it, or until the next instant something is due (a retry, a schedule's edge, a
/// watchdog deadline). It is an actor holding control-plane state only; enumerating devices and
/// opening cameras run on its I/O thread, never on Swift's cooperative pool.
public actor Supervisor: Service {
    public struct Status: Sendable {
        public let cameraID: String
        public let isRecording: Bool
        public let node: String?
        /// Frames captured over all of this camera's sessions.
        public let frames: Int
        public let session: CaptureSession?
        public let lastProblem: String?
        /// Reconnecting: since it was lost, and when it is tried next (monotonic; nil: unknown, or on a connect event).
        public let lostSinceMonotonicNanos: Int64?, nextAttemptMonotonicNanos: Int64?
        /// False while the camera is closed because none of its jobs is scheduled now.
        public let isScheduled: Bool
        public let state: State
        /// The camera's format while it is open.
        public let format: DeviceFormat?
        /// Frames per second the camera delivers, measured (0 before it delivered two frames):
        /// what a camera sends, not what was asked of it.
        public let frameRate: Double
        /// Frames its outputs dropped because they fell behind.
        public let droppedFrames: Int
        /// What its recordings hold ("h264", or the camera's own format when copied); nil: no recording job.
        public let recordedCodec: String?
        /// When its last frame was captured (monotonic clock, `SystemClocks.monotonicNanos`); nil: none yet.
        public let lastFrameMonotonicNanos: Int64?
        /// The picture size its recordings hold (nil: none recorded yet): a network camera's
        /// format has none, its frames carry it in their stream description.
        public let recordedFrameSize: (width: Int, height: Int)?

        /// Its picture size: the camera's format's, or when that says none, its recordings'.
        public var frameSize: (width: Int, height: Int)? {
            if let format, format.width > 0, format.height > 0 { return (format.width, format.height) }
            return recordedFrameSize
        }

        /// What a person (the web page, the API) is told about a camera.
        public enum State: String, Sendable {
            case recording, starting, waiting, reconnecting, stopped
            case offSchedule = "off-schedule"
        }
    }

    final class Camera {
        var plan: CameraPlan {
            didSet { gate = ScheduleGate(plan.schedule) }
        }
        /// The plan's schedule, asked again only when its last answer expires.
        var gate: ScheduleGate
        var session: CaptureSession?
        var sessionTask: Task<Void, Never>?
        var node: String?
        var ladder = RetryLadder()
        /// When to try to open it next (monotonic); nil: when a device is connected.
        var nextAttempt: Int64? = 0
        var framesBefore = 0
        /// When the last frame of an earlier session was captured (monotonic).
        var lastFrameBefore: Int64?
        var lastFrames = 0
        var lastFrameProgress = SystemClocks.monotonicNanos()
        var lostAt: Int64?
        var wasLost = false
        /// Lost and not found again: `camera_found` is due once its frames flow.
        var isDown = false {
            didSet { if isDown && !oldValue { downSince = SystemClocks.monotonicNanos() } }
        }
        /// When this outage began (monotonic): set as the camera goes down, for the API's `since`.
        var downSince: Int64?
        /// Its session's stream delivers frames: a stream that reconnects by itself runs without
        /// while it connects or reconnects.
        var isReceiving = false
        /// Held while its session starts, stops or is reconfigured: the actor is re-entered at
        /// every await, and two of these interleaved would open the camera twice, hand a new
        /// session outputs the old one still writes to, or attach two movie outputs to one
        /// session (two writers on one camera). A pass leaves a camera whose turn is taken alone;
        /// a reload or a removal waits for it.
        let turn = AsyncTurn()
        var lastProblem: String?
        /// The last runtime error of the current session: the cause if it ends by itself.
        var sessionError: String?
        var isScheduled = true
        /// Set once the camera left the plans: whatever is under way for it stops.
        var isRemoved = false
        init(plan: CameraPlan) {
            self.plan = plan
            gate = ScheduleGate(plan.schedule)
        }
    }

    /// How long before a scheduled window the camera is opened, so its first instant is captured
    /// (a USB camera takes about a second to open and a few frames to settle its exposure).
    private let scheduleLeadNanos: Int64

    let source: any DeviceSource
    /// Plug events: the recorder's device monitor, or the source's own stream.
    private let deviceChanges: AsyncStream<DeviceChange>?
    var cameras: [Camera]
    public let events: RecorderEvents
    let watchdogNanos: Int64
    let logger = Logger(label: "vigil.supervisor")
    /// Enumerating devices and opening, reconfiguring and closing cameras block: they run here.
    let io = BlockingIO("vigil.devices")
    /// Rings when something changed that the loop must look at.
    let wakeup = Wakeup()
    /// Connect events seen so far: a camera found absent by an enumeration that raced a connect
    /// event is looked for again at once.
    var connectCount = 0
    /// The most recent connect event's time, for reattach latency.
    var lastConnect: Int64?
    /// Set once `run()` is shutting down.
    var isStopping = false

    public init(
        plans: [CameraPlan], source: any DeviceSource, events: RecorderEvents = RecorderEvents(), watchdogSeconds: Double = 10,
        scheduleLeadSeconds: Double = 5, deviceChanges: AsyncStream<DeviceChange>? = nil
    ) {
        scheduleLeadNanos = Int64(scheduleLeadSeconds * 1e9)
        self.source = source
        self.deviceChanges = deviceChanges
        cameras = plans.map(Camera.init)
        self.events = events
        watchdogNanos = Int64(watchdogSeconds * 1e9)
    }

    /// The cameras, without auxiliary streams (`CameraPlan.isAuxiliary`).
    public func status() -> [Status] {
        cameras.filter { !$0.plan.isAuxiliary }.map { c in
            Status(
                cameraID: c.plan.cameraID, isRecording: isRecording(c), node: c.node,
                frames: c.framesBefore + (c.session?.capturedFrameCount ?? 0), session: c.session, lastProblem: c.lastProblem,
                lostSinceMonotonicNanos: c.isDown ? c.downSince : nil, nextAttemptMonotonicNanos: nextAttempt(of: c),
                isScheduled: c.isScheduled, state: state(of: c), format: c.session?.activeFormat,
                frameRate: c.session?.measuredFrameRate ?? 0,
                droppedFrames: c.plan.outputs.reduce(0) { $0 + $1.0.droppedFrameCount }, recordedCodec: recordedCodec(c),
                lastFrameMonotonicNanos: c.session?.lastFrameMonotonicNanos ?? c.lastFrameBefore,
                recordedFrameSize: movie(of: c)?.recordedFrameSize)
        }
    }

    /// Its session runs and frames flow (a network camera's session also runs while it reconnects).
    private func isRecording(_ c: Camera) -> Bool {
        guard let session = c.session, session.isRunning else { return false }
        return c.isReceiving || session.device?.reconnectsByItself != true
    }

    private func state(of c: Camera) -> Status.State {
        if isStopping { return .stopped }
        if isRecording(c) { return .recording }
        if !c.isScheduled { return .offSchedule }
        if c.wasLost { return .reconnecting }
        return c.lastProblem == nil ? .starting : .waiting
    }

    // MARK: - Changing the plans while running

    /// Starts supervising another camera.
    public func add(_ plan: CameraPlan) {
        guard !cameras.contains(where: { $0.plan.cameraID == plan.cameraID }) else { return }
        cameras.append(Camera(plan: plan))
        wakeup.signal()
    }

    /// Stops a camera (its files are finalized) and forgets it.
    public func remove(cameraID: String) async {
        guard let index = cameras.firstIndex(where: { $0.plan.cameraID == cameraID }) else { return }
        let camera = cameras.remove(at: index)
        camera.isRemoved = true
        await stopSession(of: camera)
    }

    /// Runs `body` in the camera's turn, then has the loop look at the cameras again (one it
    /// skipped while the turn was taken, say).
    func inTurn<T>(of camera: Camera, _ body: () async throws -> T) async rethrows -> T {
        defer { wakeup.signal() }
        return try await camera.turn.run(body)
    }

    /// Changes a camera's plan. A running session is reconfigured in one
    /// `beginConfiguration()`/`commitConfiguration()`: outputs kept in the new plan keep
    /// recording without a gap, removed ones are finalized, new ones start. If the camera refuses
    /// the change, the old configuration keeps running and the error is thrown. A plan that
    /// matches another device restarts the camera.
    public func reconfigure(_ plan: CameraPlan) async throws {
        guard let camera = cameras.first(where: { $0.plan.cameraID == plan.cameraID }) else { return add(plan) }
        try await inTurn(of: camera) {
            guard !camera.isRemoved else { return }
            try await reconfigureInTurn(camera, to: plan)
        }
    }

    private func reconfigureInTurn(_ camera: Camera, to plan: CameraPlan) async throws {
        guard let session = camera.session, let device = session.device else {
            camera.plan = plan
            camera.nextAttempt = 0
            return
        }
        let present = await io.run { [source] in source.devices() }
        // Reopened when the device is gone, or its stream changed (a network camera's password
        // or transport): a session keeps the stream it opened.
        guard present.contains(where: {
            plan.matches($0) && $0.details.node == device.details.node && $0.opensTheSameStream(as: device)
        }) else {
            camera.plan = plan
            await endSession(of: camera)
            camera.nextAttempt = 0
            return
        }
        try await io.run {
            session.beginConfiguration()
            try session.setFormat(plan.format)
            try session.setFrameRate(plan.frameRate)
            for (key, value) in plan.controls { try session.setControl(key, to: value) }
            // What the session feeds, not what the old plan says it should: whatever is attached
            // and not in the new plan is detached, so no output outlives its plan.
            for output in session.outputs where !plan.outputs.contains(where: { $0.0 === output }) {
                try session.removeOutput(output)
            }
            for (output, settings) in plan.outputs {
                try session.addOutput(output, settings: settings)
                try session.setConnection(for: output, settings)
            }
            try session.commitConfiguration()
        }
        camera.plan = plan
    }

    /// Supervises until graceful shutdown (or cancellation), then stops every session (files
    /// finalized).
    public func run() async {
        let changes = deviceChanges ?? source.changes()
        let listener = Task { [weak self] in
            for await change in changes { await self?.handle(change) }
        }
        await withGracefulShutdownHandler {
            while !wakeup.isStopped && !Task.isCancelled {
                let due = await pass()
                await wakeup.wait(untilMonotonic: due)
            }
        } onGracefulShutdown: { [wakeup] in
            wakeup.stop()
        }
        // From here on nothing opens a camera. A plug event being handled may be opening one
        // right now: it finishes (and sees `isStopping`) before the cameras are stopped, so no
        // session outlives `run()` and leaves a `.partial` behind.
        isStopping = true
        listener.cancel()
        await listener.value
        await stopAll()
    }

    /// Stops every camera at once, not one after another: each may take a moment to drain its
    /// encoder and finalize its segment, and a shutdown must not add those moments up.
    private func stopAll() async {
        await withTaskGroup(of: Void.self) { group in
            for id in cameras.map(\.plan.cameraID) {
                group.addTask { await self.stopSession(cameraID: id) }
            }
        }
    }

    private func stopSession(cameraID: String) async {
        guard let camera = cameras.first(where: { $0.plan.cameraID == cameraID }) else { return }
        await stopSession(of: camera)
    }

    // MARK: - Events from outside

    private func handle(_ change: DeviceChange) async {
        switch change {
        case .connected(let node):
            lastConnect = SystemClocks.monotonicNanos()
            connectCount += 1
            // A camera came (back): whoever waits tries at once, with a fresh ladder.
            for camera in cameras where camera.session == nil && !camera.turn.isTaken {
                camera.ladder.reset()
                camera.nextAttempt = 0
            }
            logger.debug("\(node) connected")
            _ = await pass()
            wakeup.signal()
        case .disconnected(let node):
            let affected = cameras.filter { $0.node == node && $0.session != nil }
            guard !affected.isEmpty else { return }
            // Events can arrive late: if the camera is back on that node already, this one is stale.
            let present = await io.run { [source] in source.devices() }
            for camera in affected where !present.contains(where: { camera.plan.matches($0) && $0.details.node == node }) {
                await lose(camera, cause: .unplugged, reason: "\(node) was unplugged")
            }
        }
    }

    // MARK: - One pass over the cameras

    /// Opens, closes and restarts what is due now, and returns when to look again (monotonic
    /// nanoseconds; nil: only when something wakes the supervisor).
    private func pass() async -> Int64? {
        guard !isStopping else { return nil }
        let now = SystemClocks.monotonicNanos()
        let wallNow = SystemClocks.wallNanos()
        var present: [CaptureDevice]?
        var earliest: Int64?
        func due(_ instant: Int64?) { if let instant { earliest = min(earliest ?? instant, instant) } }
        for camera in cameras {
            let (scheduled, edge) = scheduleState(camera, at: wallNow)
            camera.isScheduled = scheduled
            // A schedule's edge is a wall-clock instant: looked at again by a minute at most, so
            // a clock step cannot leave a camera open or closed for long.
            due(edge.map { now + min(max($0 - wallNow, 0), 60_000_000_000) })
            // A start, stop or reconfiguration is under way: its end wakes the loop again.
            if camera.turn.isTaken { continue }
            if camera.session != nil && !camera.isScheduled {
                logger.info("camera \(camera.plan.cameraID): no job scheduled now, closing it")
                await stopSession(of: camera)
                camera.nextAttempt = 0
                continue
            }
            if let session = camera.session {
                // A stream that reconnects by itself notices its own stalls: no watchdog.
                if session.device?.reconnectsByItself == true { continue }
                // Watchdog: frames must keep coming. Looked at when the deadline passes, so a
                // camera that stalls is restarted after one to two watchdog periods.
                let frames = session.capturedFrameCount
                if frames != camera.lastFrames {
                    camera.lastFrames = frames
                    camera.lastFrameProgress = now
                } else if now - camera.lastFrameProgress > watchdogNanos {
                    let seconds = Double(watchdogNanos) / 1e9
                    logger.warning("camera \(camera.plan.cameraID): no frame for \(seconds) s, restarting it")
                    await lose(camera, cause: .stalled, reason: "no frame for \(seconds) s (camera wedged or stream stalled)", restartAt: now)
                    due(now)
                    continue
                }
                due(camera.lastFrameProgress + watchdogNanos + 1)
                continue
            }
            guard camera.isScheduled, let attempt = camera.nextAttempt else { continue }
            guard now >= attempt else {
                due(attempt)
                continue
            }
            // Claimed before the first await, so a re-entrant pass, a reload or a removal leaves
            // this camera alone until it is open (or not).
            guard camera.turn.take() else { continue }
            defer { camera.turn.give() }
            let connectsBefore = connectCount
            if present == nil { present = await io.run { [source] in source.devices() } }
            guard let device = present!.first(where: camera.plan.matches) else {
                // Not here: a connect event (or the monitor's rescan) brings it, unless one came
                // while the devices were being listed.
                camera.nextAttempt = connectCount != connectsBefore ? 0 : nil
                if camera.nextAttempt != nil { due(now) }
                continue
            }
            await start(camera, on: device)
            // Opened: its first watchdog deadline; failed: its next attempt.
            due(camera.session != nil ? camera.lastFrameProgress + watchdogNanos + 1 : camera.nextAttempt)
        }
        return earliest
    }

    /// Whether any of the plan's jobs is active now or within the lead time, and the wall-clock
    /// instant at which that answer may change (nil: never).
    private func scheduleState(_ camera: Camera, at wallNanos: Int64) -> (Bool, Int64?) {
        let state = camera.gate.state(at: wallNanos)
        guard state.untilWallNanos != .max else { return (state.isActive, nil) }
        if state.isActive { return (true, state.untilWallNanos) }
        let opensAt = state.untilWallNanos - scheduleLeadNanos
        return (wallNanos >= opensAt, wallNanos >= opensAt ? state.untilWallNanos : opensAt)
    }
}
