import Capture
import Foundation
import Glibc
import Logging

/// What to record from one camera, matched by its stable identity (never by node path).
public struct CameraPlan: Sendable {
    /// The camera's name in recordings, events and logs.
    public var cameraID: String
    /// Which present device is this camera (default: the device whose id is `cameraID`).
    public var matches: @Sendable (CaptureDevice) -> Bool
    public var format: FormatRequest
    public var frameRate: Double
    public var controls: [String: Int64]
    /// The outputs, kept across reattaches (their counters and cadence carry on).
    public var outputs: [(CaptureOutput, ConnectionSettings)]
    /// When the camera must be open: while any of its jobs is active (nil: always).
    public var schedule: (any OutputSchedule)?

    public init(
        cameraID: String, matches: (@Sendable (CaptureDevice) -> Bool)? = nil, format: FormatRequest, frameRate: Double,
        controls: [String: Int64] = [:], outputs: [(CaptureOutput, ConnectionSettings)], schedule: (any OutputSchedule)? = nil
    ) {
        self.cameraID = cameraID
        self.matches = matches ?? { $0.id == cameraID }
        self.format = format
        self.frameRate = frameRate
        self.controls = controls
        self.outputs = outputs
        self.schedule = schedule
    }
}

/// Keeps every planned camera recording: one capture session per camera while it is present.
/// When a camera disappears its session is interrupted (open segments are finalized) and the
/// camera waits; when it comes back (on any node) it is reattached with the same outputs into
/// a new segment. A camera that fails to open is retried on a ladder, reset by a connect event.
/// A watchdog restarts a session that delivers no frame for `watchdogSeconds`. A camera with a
/// schedule is opened shortly before its first job becomes active and closed when none is.
/// Plans can be added, changed and removed while it runs (configuration reload).
///
/// The supervisor is an actor holding control-plane state only; opening and closing cameras
/// runs on plain threads, never on Swift's cooperative pool.
public actor Supervisor {
    public struct Status: Sendable {
        public let cameraID: String
        public let isRecording: Bool
        public let node: String?
        /// Frames captured over all of this camera's sessions.
        public let frames: Int
        public let session: CaptureSession?
        public let lastProblem: String?
        /// False while the camera is closed because none of its jobs is scheduled now.
        public let isScheduled: Bool
    }

    private final class Camera {
        var plan: CameraPlan {
            didSet { gate = ScheduleGate(plan.schedule) }
        }
        /// The plan's schedule, asked again only when its last answer expires.
        var gate: ScheduleGate
        var session: CaptureSession?
        var sessionTask: Task<Void, Never>?
        var node: String?
        var ladder = RetryLadder()
        var nextAttempt: Int64? = 0
        var framesBefore = 0
        var lastFrames = 0
        var lastFrameProgress = SystemClocks.monotonicNanos()
        var lostAt: Int64?
        var wasLost = false
        /// Set while a start is under way: the actor is re-entered at every await, and a second
        /// tick must not open the same camera twice.
        var isStarting = false
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

    private let source: any DeviceSource
    private var cameras: [Camera]
    public let events: RecorderEvents
    private let watchdogNanos: Int64
    private let logger = Logger(label: "vigil.supervisor")

    public init(
        plans: [CameraPlan], source: any DeviceSource, events: RecorderEvents = RecorderEvents(), watchdogSeconds: Double = 10,
        scheduleLeadSeconds: Double = 5
    ) {
        scheduleLeadNanos = Int64(scheduleLeadSeconds * 1e9)
        self.source = source
        cameras = plans.map(Camera.init)
        self.events = events
        watchdogNanos = Int64(watchdogSeconds * 1e9)
    }

    public func status() -> [Status] {
        cameras.map { c in
            Status(
                cameraID: c.plan.cameraID, isRecording: c.session?.isRunning == true, node: c.node,
                frames: c.framesBefore + (c.session?.capturedFrameCount ?? 0), session: c.session, lastProblem: c.lastProblem,
                isScheduled: c.isScheduled)
        }
    }

    // MARK: - Changing the plans while running

    /// Starts supervising another camera.
    public func add(_ plan: CameraPlan) {
        guard !cameras.contains(where: { $0.plan.cameraID == plan.cameraID }) else { return }
        cameras.append(Camera(plan: plan))
    }

    /// Stops a camera (its files are finalized) and forgets it.
    public func remove(cameraID: String) async {
        guard let index = cameras.firstIndex(where: { $0.plan.cameraID == cameraID }) else { return }
        let camera = cameras.remove(at: index)
        camera.isRemoved = true
        await stopSession(of: camera)
    }

    /// Changes a camera's plan. A running session is reconfigured in one
    /// `beginConfiguration()`/`commitConfiguration()`: outputs kept in the new plan keep
    /// recording without a gap, removed ones are finalized, new ones start. If the camera refuses
    /// the change, the old configuration keeps running and the error is thrown. A plan that
    /// matches another device restarts the camera.
    public func reconfigure(_ plan: CameraPlan) async throws {
        guard let camera = cameras.first(where: { $0.plan.cameraID == plan.cameraID }) else { return add(plan) }
        guard let session = camera.session, let device = session.device else {
            camera.plan = plan
            camera.nextAttempt = 0
            return
        }
        let present = await onThread { [source] in source.devices() }
        guard present.contains(where: { plan.matches($0) && $0.details.node == device.details.node }) else {
            camera.plan = plan
            await stopSession(of: camera)
            camera.nextAttempt = 0
            return
        }
        let old = camera.plan
        let result: Result<Void, Error> = await onThread {
            do {
                session.beginConfiguration()
                try session.setFormat(plan.format)
                try session.setFrameRate(plan.frameRate)
                for (key, value) in plan.controls { try session.setControl(key, to: value) }
                for (output, _) in old.outputs where !plan.outputs.contains(where: { $0.0 === output }) {
                    try session.removeOutput(output)
                }
                for (output, settings) in plan.outputs {
                    try session.addOutput(output, settings: settings)
                    try session.setConnection(for: output, settings)
                }
                try session.commitConfiguration()
                return .success(())
            } catch {
                return .failure(error)
            }
        }
        try result.get()
        camera.plan = plan
    }

    /// Supervises until the task is cancelled, then stops every session (files finalized).
    public func run() async {
        let changes = source.changes()
        let listener = Task { [weak self] in
            for await change in changes { await self?.handle(change) }
        }
        while !Task.isCancelled {
            await tick()
            try? await Task.sleep(nanoseconds: 100_000_000)
        }
        // From here on nothing opens a camera. A plug event being handled may be opening one
        // right now: it finishes (and sees `isStopping`) before the cameras are stopped, so no
        // session outlives `run()` and leaves a `.partial` behind.
        isStopping = true
        listener.cancel()
        await listener.value
        await stopAll()
    }

    /// Set once `run()` is shutting down.
    private var isStopping = false

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
            // A camera came (back): whoever waits tries at once, with a fresh ladder.
            for camera in cameras where camera.session == nil && !camera.isStarting {
                camera.ladder.reset()
                camera.nextAttempt = 0
            }
            logger.debug("\(node) connected")
            await tick()
        case .disconnected(let node):
            let affected = cameras.filter { $0.node == node && $0.session != nil }
            guard !affected.isEmpty else { return }
            // Events can arrive late: if the camera is back on that node already, this one is stale.
            let present = await onThread { [source] in source.devices() }
            for camera in affected where !present.contains(where: { camera.plan.matches($0) && $0.details.node == node }) {
                await lose(camera, reason: "\(node) was unplugged")
            }
        }
    }

    private func sessionEvent(_ event: SessionEvent, cameraID: String, session: CaptureSession) async {
        guard let camera = cameras.first(where: { $0.plan.cameraID == cameraID }), camera.session === session else {
            forward(event)
            return
        }
        // Losing the camera stops its session, which waits for this very event stream to drain:
        // so it runs apart from the stream, which goes on delivering the session's last events.
        switch event {
        case .interrupted(_, let reason):
            Task { await self.lose(camera, of: session, reason: reason) }
        case .runtimeError(_, let message, _):
            camera.sessionError = message
            forward(event)
        case .stopped:
            // Nobody stopped it (stopping clears `camera.session` first): capture ended by itself,
            // after an error such as EIO from VIDIOC_DQBUF. The camera is lost at once, not when
            // the watchdog notices that no frame comes.
            let reason = camera.sessionError ?? "capture ended by itself"
            Task { await self.lose(camera, of: session, reason: reason) }
        default:
            forward(event)
        }
    }

    private func forward(_ event: SessionEvent) {
        switch event {
        case .segmentStarted(let c, let path, let start): events.emit(.segmentStarted(camera: c, path: path, startWallNanos: start))
        case .segmentFinished(let c, let info): events.emit(.segmentFinalized(camera: c, info))
        case .stillSaved(let c, let info): events.emit(.stillSaved(camera: c, path: info.path, shotWallNanos: info.shotWallNanos))
        case .droppedFrames(let c, let o, let n): events.emit(.framesDropped(camera: c, output: o, count: n))
        case .runtimeError(let c, let m, let code): events.emit(.error(camera: c, message: m, errno: code))
        default: break
        }
    }

    // MARK: - The loop

    private func tick() async {
        guard !isStopping else { return }
        let now = SystemClocks.monotonicNanos()
        let wallNow = SystemClocks.wallNanos()
        var present: [CaptureDevice]?
        for camera in cameras {
            camera.isScheduled = isScheduled(camera, at: wallNow)
            if camera.session != nil && !camera.isScheduled {
                logger.info("camera \(camera.plan.cameraID): no job scheduled now, closing it")
                await stopSession(of: camera)
                camera.nextAttempt = 0
                continue
            }
            if let session = camera.session {
                // Watchdog: frames must keep coming.
                let frames = session.capturedFrameCount
                if frames != camera.lastFrames {
                    camera.lastFrames = frames
                    camera.lastFrameProgress = now
                } else if now - camera.lastFrameProgress > watchdogNanos {
                    let seconds = Double(watchdogNanos) / 1e9
                    logger.warning("camera \(camera.plan.cameraID): no frame for \(seconds) s, restarting it")
                    await lose(camera, reason: "no frame for \(seconds) s (camera wedged or stream stalled)", restartAt: now)
                }
                continue
            }
            guard camera.isScheduled, !camera.isStarting, let due = camera.nextAttempt, now >= due else { continue }
            // Claimed before the first await, so a re-entrant tick leaves this camera alone.
            camera.isStarting = true
            if present == nil { present = await onThread { [source] in source.devices() } }
            guard let device = present!.first(where: camera.plan.matches) else {
                // Not here: wait for a connect event, checking now and then anyway.
                camera.nextAttempt = now + 5_000_000_000
                camera.isStarting = false
                continue
            }
            await start(camera, on: device)
        }
    }

    /// Whether any of the plan's jobs is active now or within the lead time.
    private func isScheduled(_ camera: Camera, at wallNanos: Int64) -> Bool {
        let now = camera.gate.state(at: wallNanos)
        return now.isActive || now.untilWallNanos - wallNanos <= scheduleLeadNanos
    }

    private func start(_ camera: Camera, on device: CaptureDevice) async {
        let plan = camera.plan
        defer { camera.isStarting = false }
        let session = CaptureSession()
        // Subscribed before the session runs, so that not even its first event (an error in its
        // first frame) is missed.
        let sessionEvents = session.events
        // Recordings and events carry the plan's name for the camera.
        let input = device.id == plan.cameraID ? device : device.renamed(plan.cameraID)
        let result: Result<Void, Error> = await onThread {
            do {
                session.beginConfiguration()
                try session.addInput(input)
                try session.setFormat(plan.format)
                try session.setFrameRate(plan.frameRate)
                for (key, value) in plan.controls { try session.setControl(key, to: value) }
                for (output, settings) in plan.outputs { try session.addOutput(output, settings: settings) }
                try session.commitConfiguration()
                try session.startRunning()
                return .success(())
            } catch {
                return .failure(error)
            }
        }
        let now = SystemClocks.monotonicNanos()
        switch result {
        case .failure(let error):
            camera.ladder.recordFailure()
            let delay = camera.ladder.nextDelaySeconds
            camera.nextAttempt = now + Int64(delay * 1e9)
            camera.lastProblem = "\(error)"
            logger.error("camera \(plan.cameraID) could not start (attempt \(camera.ladder.failures)): \(error); retrying in \(Int(delay)) s")
            events.emit(.error(camera: plan.cameraID, message: "could not start: \(error)"))
        case .success where camera.isRemoved || isStopping:
            await session.stop()
        case .success:
            camera.session = session
            camera.node = device.details.node
            camera.ladder.reset()
            camera.nextAttempt = nil
            camera.lastFrames = 0
            camera.lastFrameProgress = now
            camera.lastProblem = nil
            camera.sessionError = nil
            let id = plan.cameraID
            camera.sessionTask = Task { [weak self] in
                for await event in sessionEvents {
                    await self?.sessionEvent(event, cameraID: id, session: session)
                    // `stopped` is a session's last event.
                    if case .stopped = event { break }
                }
            }
            if camera.wasLost {
                // From the connect event that brought it back (nil if it came back without one).
                let latency = lastConnect.flatMap { $0 >= camera.lostAt! ? Double(now - $0) / 1e9 : nil }
                self.events.emit(.cameraFound(camera: id, node: device.details.node ?? "?", reattachSeconds: latency))
            }
            self.events.emit(.sessionStarted(camera: id))
        }
    }

    /// The most recent connect event's time, for reattach latency.
    private var lastConnect: Int64?

    /// Marks a camera lost: its session is stopped (files finalized) and it waits to come back.
    private func lose(_ camera: Camera, of session: CaptureSession? = nil, reason: String, restartAt: Int64? = nil) async {
        guard camera.session != nil, session == nil || camera.session === session else { return }
        await stopSession(of: camera)
        camera.lostAt = SystemClocks.monotonicNanos()
        camera.wasLost = true
        camera.lastProblem = reason
        camera.nextAttempt = restartAt ?? camera.lostAt! + Int64(camera.ladder.nextDelaySeconds * 1e9)
        events.emit(.cameraLost(camera: camera.plan.cameraID, reason: reason))
    }

    private func stopSession(of camera: Camera) async {
        guard let session = camera.session else { return }
        camera.session = nil
        await session.stop()
        // Counted once capture has stopped, so the last frames are not missed.
        camera.framesBefore += session.capturedFrameCount
        // Its last events (the final segment, `stopped`) are delivered before it is forgotten:
        // the index and the hooks must see them. Five seconds at most, in case one never comes.
        if let task = camera.sessionTask {
            let deadline = Task {
                try? await Task.sleep(nanoseconds: 5_000_000_000)
                task.cancel()
            }
            await task.value
            deadline.cancel()
        }
        camera.sessionTask = nil
        events.emit(.sessionStopped(camera: camera.plan.cameraID))
    }
}
