import Capture
import Foundation
import Plumbing

/// Opening, losing and stopping one camera's session, and what its events mean.
extension Supervisor {
    /// Opens the camera (the caller holds its turn).
    func start(_ camera: Camera, on device: CaptureDevice) async {
        let plan = camera.plan
        let session = CaptureSession(fence: plan.fence, timeline: plan.timeline)
        // Subscribed before the session runs, so that not even its first event (an error in its
        // first frame) is missed.
        let sessionEvents = session.events
        // Recordings and events carry the plan's name for the camera.
        let input = device.id == plan.cameraID ? device : device.renamed(plan.cameraID)
        let result: Result<Void, Error> = await io.run {
            Result {
                session.beginConfiguration()
                try session.addInput(input)
                try session.setFormat(plan.format)
                try session.setFrameRate(plan.frameRate)
                for (key, value) in plan.controls { try session.setControl(key, to: value) }
                for (output, settings) in plan.outputs { try session.addOutput(output, settings: settings) }
                try session.commitConfiguration()
                try session.startRunning()
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
            // Removed (or Vigil stopping) while it started: stopped at once, but what it wrote
            // meanwhile (a segment opened and finished) is still announced, or the file would be
            // on disk and in no index (`ReloadStormTests`, camera b added and removed).
            await session.stop()
            await deliverLastEvents(sessionEvents)
        case .success:
            // The ladder is not reset here: only frames show that the camera works (`lose`).
            let reconnects = device.reconnectsByItself
            camera.session = session
            camera.node = device.details.node
            camera.nextAttempt = nil
            camera.lastFrames = 0
            camera.lastFrameProgress = now
            camera.isReceiving = false
            // A network camera down before is still down until its stream says frames flow.
            if !camera.isDown || !reconnects { camera.lastProblem = nil }
            camera.sessionError = nil
            let id = plan.cameraID
            camera.sessionTask = Task { [weak self] in
                for await event in sessionEvents {
                    await self?.sessionEvent(event, cameraID: id, session: session)
                    // `stopped` is a session's last event.
                    if case .stopped = event { break }
                }
            }
            if camera.isDown && !reconnects {
                camera.isDown = false
                // From the connect event that brought it back (nil if it came back without one).
                let latency = lastConnect.flatMap { $0 >= camera.lostAt! ? Double(now - $0) / 1e9 : nil }
                events.emit(.cameraFound(camera: id, node: device.details.node ?? "?", reattachSeconds: latency))
            }
            events.emit(.sessionStarted(camera: id))
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
        case .interrupted(_, let cause, let reason) where session.device?.reconnectsByItself == true:
            streamLost(camera, cause: cause, reason: reason)
        case .interruptionEnded:
            streamFlows(camera)
        case .interrupted(_, let cause, let reason):
            Task { await self.lose(camera, of: session, cause: cause, reason: reason) }
        case .runtimeError(_, let message, _):
            camera.sessionError = message
            forward(event)
        case .stopped:
            // Nobody stopped it (stopping clears `camera.session` first): capture ended by itself,
            // after an error such as EIO from VIDIOC_DQBUF. The camera is lost at once, not when
            // the watchdog notices that no frame comes.
            let reason = camera.sessionError ?? "capture ended by itself"
            Task { await self.lose(camera, of: session, cause: .failed, reason: reason) }
        default:
            forward(event)
        }
    }

    private func forward(_ event: SessionEvent) {
        switch event {
        case .segmentStarted(let c, let path, let start): events.emit(.segmentStarted(camera: c, path: path, startWallNanos: start))
        case .segmentFinished(let c, let info): events.emit(.segmentFinalized(camera: c, info))
        case .segmentDiscarded(let c, let path): events.emit(.segmentDiscarded(camera: c, path: path))
        case .stillSaved(let c, let info): events.emit(.stillSaved(camera: c, path: info.path, shotWallNanos: info.shotWallNanos))
        case .motionStarted(let c, let start): events.emit(.motionStarted(camera: c, startWallNanos: start))
        case .motionUpdated(let c, let info): events.emit(.motionUpdated(camera: c, info))
        case .motionEnded(let c, let info): events.emit(.motionEnded(camera: c, info))
        case .droppedFrames(let c, let o, let n): events.emit(.framesDropped(camera: c, output: o, count: n))
        case .runtimeError(let c, let m, let code): events.emit(.error(camera: c, message: m, errno: code))
        default: break
        }
    }

    /// The stream of a session that reconnects by itself lost its camera: the session is kept
    /// (its stream retries on the camera's ladder), and the camera is lost once per outage,
    /// however many attempts fail or however often the cause changes.
    private func streamLost(_ camera: Camera, cause: LossCause, reason: String) {
        camera.isReceiving = false
        camera.lastProblem = reason
        guard !camera.isDown else { return }
        camera.isDown = true
        camera.wasLost = true
        camera.lostAt = SystemClocks.monotonicNanos()
        events.emit(.cameraLost(camera: camera.plan.cameraID, cause: cause, reason: reason))
    }

    /// Frames flow from a stream that reconnects by itself: a camera that was down is found.
    private func streamFlows(_ camera: Camera) {
        camera.isReceiving = true
        camera.lastProblem = nil
        guard camera.isDown else { return }
        camera.isDown = false
        events.emit(.cameraFound(camera: camera.plan.cameraID, node: camera.node ?? "?", reattachSeconds: nil))
    }

    /// When a camera that does not record is tried next: its stream's own ladder for a stream
    /// that reconnects by itself, else the supervisor's (nil: when its device is connected).
    func nextAttempt(of camera: Camera) -> Int64? {
        if let session = camera.session, let device = session.device, device.reconnectsByItself {
            return camera.isReceiving ? nil : device.nextAttemptMonotonicNanos
        }
        return camera.session == nil ? camera.nextAttempt : nil
    }

    /// Marks a camera lost: its session is stopped (files finalized) and it waits to come back.
    /// A session that delivered frames worked, so the next attempt is on the ladder's first
    /// rung; one that delivered none was one more failed attempt.
    func lose(_ camera: Camera, of session: CaptureSession? = nil, cause: LossCause, reason: String, restartAt: Int64? = nil) async {
        await inTurn(of: camera) { await loseInTurn(camera, of: session, cause: cause, reason: reason, restartAt: restartAt) }
    }

    private func loseInTurn(_ camera: Camera, of session: CaptureSession?, cause: LossCause, reason: String, restartAt: Int64?) async {
        guard let current = camera.session, session == nil || current === session else { return }
        await endSession(of: camera)
        if current.capturedFrameCount > 0 { camera.ladder.reset() } else { camera.ladder.recordFailure() }
        camera.lostAt = SystemClocks.monotonicNanos()
        camera.wasLost = true
        camera.lastProblem = reason
        camera.nextAttempt = restartAt ?? camera.lostAt! + Int64(camera.ladder.nextDelaySeconds * 1e9)
        if !camera.isDown {
            camera.isDown = true
            events.emit(.cameraLost(camera: camera.plan.cameraID, cause: cause, reason: reason))
        }
    }

    /// Stops the camera's session in its turn (files finalized).
    func stopSession(of camera: Camera) async {
        await inTurn(of: camera) { await endSession(of: camera) }
    }

    /// Stops the camera's session; the caller holds its turn.
    func endSession(of camera: Camera) async {
        guard let session = camera.session else { return }
        camera.session = nil
        await session.stop()
        // Counted once capture has stopped, so the last frames are not missed.
        camera.framesBefore += session.capturedFrameCount
        camera.lastFrameBefore = session.lastFrameMonotonicNanos ?? camera.lastFrameBefore
        // Its last events (the final segment, `stopped`) are delivered before it is forgotten:
        // the index and the hooks must see them. Five seconds at most, in case one never comes.
        if let task = camera.sessionTask { await Self.awaitDrain(task) }
        camera.sessionTask = nil
        events.emit(.sessionStopped(camera: camera.plan.cameraID))
    }

    /// Forwards the events of a session nobody else listens to, up to its `stopped`.
    private func deliverLastEvents(_ sessionEvents: AsyncStream<SessionEvent>) async {
        let task = Task { [weak self] in
            for await event in sessionEvents {
                await self?.forward(event)
                if case .stopped = event { break }
            }
        }
        await Self.awaitDrain(task)
    }

    /// Waits for a session's events to be delivered, five seconds at most.
    private static func awaitDrain(_ task: Task<Void, Never>) async {
        let deadline = Task {
            try? await Task.sleep(for: .seconds(5))
            task.cancel()
        }
        await task.value
        deadline.cancel()
    }
}
