import Foundation
import Logging
import Synchronization
import SystemPackage

/// Owns one camera from open to close and feeds its frames to outputs (`AVCaptureSession`).
///
/// Changes made between `beginConfiguration()` and `commitConfiguration()` apply together; a
/// change made outside such a pair is committed at once. A commit the camera cannot honour
/// throws and leaves the previous configuration running.
///
/// Frames are read on one dedicated thread per session and handed to each output's own worker.
public final class CaptureSession: Sendable {
    struct Configuration: Sendable {
        var device: CaptureDevice?
        var format: FormatRequest = .preset(.high)
        var frameRate: Double = 30
        var connections: [CaptureConnection] = []
        /// Control values by key, as the user set them.
        var controls: [String: Int64] = [:]
    }

    private struct State {
        var active = Configuration()
        var pending: Configuration?
        var depth = 0
        var activeFormat: DeviceFormat?
        var activeControls: [ControlSetting] = []
        var capture: CaptureThread?
    }

    private let state = Mutex(State())
    /// Serialises commits, starts and stops (never held by the capture thread).
    private let control = NSLock()
    private let broadcaster = EventBroadcaster()
    private let capturedFrames = SharedCounter()
    private let logger = Logger(label: "vigil.session")
    /// A cluster lease's fence on the camera's frames (nil: none).
    private let fence: CaptureFence?
    /// The camera's timeline across sessions: no frame is placed at or before its last one (nil: not kept).
    private let timeline: CameraTimeline?

    public init(fence: CaptureFence? = nil, timeline: CameraTimeline? = nil) {
        self.fence = fence
        self.timeline = timeline
    }

    // MARK: - Events and status

    /// Session events (started, stopped, interrupted, errors, drops, files written). Each call
    /// returns a new stream that sees events from then on.
    public var events: AsyncStream<SessionEvent> { broadcaster.stream() }

    public var isRunning: Bool { state.withLock { $0.capture != nil } }
    public var device: CaptureDevice? { state.withLock { $0.active.device } }
    /// The format the camera is delivering (after a successful commit).
    public var activeFormat: DeviceFormat? { state.withLock { $0.activeFormat } }
    /// The frame rate asked of the camera (a network camera sends what it sends).
    public var frameRate: Double { state.withLock { $0.active.frameRate } }
    /// The frame rate the camera delivers, measured from its frames' times (nil before two).
    public var measuredFrameRate: Double? { capturedFrames.measuredFrameRate }
    /// Frames read from the camera since the session was created.
    public var capturedFrameCount: Int { capturedFrames.current }
    /// When this session's last frame was captured (monotonic clock); nil before its first.
    public var lastFrameMonotonicNanos: Int64? { capturedFrames.lastNanos }
    public var outputs: [CaptureOutput] { state.withLock { $0.active.connections.map(\.output) } }
    public var cameraID: String { device?.id ?? "unconfigured" }

    // MARK: - Configuration

    public func beginConfiguration() {
        state.withLock { s in
            if s.depth == 0 { s.pending = s.active }
            s.depth += 1
        }
    }

    /// Applies the changes made since `beginConfiguration()` atomically.
    public func commitConfiguration() throws(CaptureError) {
        let pending: Configuration? = state.withLock { s in
            guard s.depth > 0 else { return nil }
            s.depth -= 1
            guard s.depth == 0 else { return nil }
            defer { s.pending = nil }
            return s.pending
        }
        guard let pending else { return }
        try apply(pending)
    }

    public func addInput(_ device: CaptureDevice) throws(CaptureError) {
        try change { $0.device = device }
    }

    public func canSetPreset(_ preset: Preset) -> Bool {
        state.withLock { $0.pending?.device ?? $0.active.device }?.supports(preset) ?? false
    }

    /// Chooses the camera format by preset or explicit size.
    public func setFormat(_ request: FormatRequest) throws(CaptureError) {
        try change { $0.format = request }
    }

    public func setFrameRate(_ framesPerSecond: Double) throws(CaptureError) {
        try change { $0.frameRate = framesPerSecond }
    }

    /// Sets a camera control (`brightness`, `focus_auto`, `exposure_absolute`, …). Checked against
    /// the camera's range on commit; all controls of one commit are applied together.
    public func setControl(_ key: String, to value: Int64) throws(CaptureError) {
        try change { $0.controls[key] = value }
    }

    /// Control values in force (after the last successful commit).
    public var controlValues: [String: Int64] {
        state.withLock { Dictionary(uniqueKeysWithValues: $0.activeControls.map { ($0.key, $0.value) }) }
    }

    public func addOutput(_ output: CaptureOutput, settings: ConnectionSettings = .init()) throws(CaptureError) {
        try change { c in
            if !c.connections.contains(where: { $0.output === output }) {
                c.connections.append(CaptureConnection(output: output, settings: settings))
            }
        }
    }

    public func removeOutput(_ output: CaptureOutput) throws(CaptureError) {
        try change { c in c.connections.removeAll { $0.output === output } }
    }

    /// Enables/disables an output's connection or changes its rotation and mirroring.
    public func setConnection(for output: CaptureOutput, _ settings: ConnectionSettings) throws(CaptureError) {
        try change { c in
            if let i = c.connections.firstIndex(where: { $0.output === output }) { c.connections[i].settings = settings }
        }
    }

    public func connection(for output: CaptureOutput) -> CaptureConnection? {
        state.withLock { $0.active.connections.first { $0.output === output } }
    }

    private func change(_ body: (inout Configuration) -> Void) throws(CaptureError) {
        beginConfiguration()
        state.withLock { s in body(&s.pending!) }
        try commitConfiguration()
    }

    private func apply(_ new: Configuration) throws(CaptureError) {
        control.lock()
        defer { control.unlock() }
        let old = state.withLock { $0.active }
        var format: DeviceFormat?
        var controls: [ControlSetting] = []
        if let device = new.device {
            let resolved = try device.resolve(new.format, frameRate: new.frameRate)
            for c in new.connections { try c.output.validate(format: resolved, settings: c.settings) }
            format = resolved
            controls = try Self.resolveControls(new.controls, on: device)
        } else if !new.connections.isEmpty && isRunning {
            throw .noInput
        }
        let removed = old.connections.filter { o in !new.connections.contains { $0.output === o.output } }
        let added = new.connections.filter { n in !old.connections.contains { $0.output === n.output } }
        if let capture = state.withLock({ $0.capture }) {
            let deviceChanged = old.device !== new.device
            if deviceChanged {
                throw .invalidSetting("cannot change the camera of a running session: stop it first")
            }
            let formatChanged = format != state.withLock({ $0.activeFormat }) || new.frameRate != old.frameRate
            let controlsChanged = controls != state.withLock({ $0.activeControls })
            if formatChanged || controlsChanged {
                // The capture thread reopens the stream or sets the controls; if the camera
                // refuses, the old format keeps running and this commit throws.
                try capture.reconfigure(
                    format: formatChanged ? format : nil, frameRate: new.frameRate,
                    controls: controlsChanged ? controls : nil)
            }
            let context = OutputContext(cameraID: new.device!.id, events: broadcaster, frameRate: new.frameRate)
            for c in added { c.output.attach(context) }
        }
        state.withLock { s in
            s.active = new
            s.activeFormat = format
            s.activeControls = controls
            s.capture?.connections.withLock { $0 = new.connections }
        }
        if isRunning { for c in removed { c.output.detach() } }
    }

    // MARK: - Running

    /// Opens the camera and starts delivering frames to the outputs.
    public func startRunning() throws(CaptureError) {
        control.lock()
        defer { control.unlock() }
        let (configuration, format, controls, running) = state.withLock { ($0.active, $0.activeFormat, $0.activeControls, $0.capture != nil) }
        if running { return }
        guard let device = configuration.device, let format else { throw .noInput }
        let stream: any CaptureStream
        do {
            stream = try device.backend.open(format: format, frameRate: configuration.frameRate)
        } catch let error as CaptureError {
            // A failed V4L2 call is named with the camera it happened to; the errno stays.
            guard case .deviceCall = error else { throw error }
            throw .deviceFailed(camera: device.id, reason: "\(error)", errno: error.errno)
        } catch {
            throw .deviceFailed(camera: device.id, reason: "\(error)")
        }
        if !controls.isEmpty {
            do {
                try stream.apply(controls: controls)
            } catch {
                stream.close()
                throw .deviceFailed(camera: device.id, reason: "refused the control values: \(error)", errno: (error as? CaptureError)?.errno)
            }
        }
        let context = OutputContext(
            cameraID: device.id, events: broadcaster, frameRate: configuration.frameRate,
            rawFrameBytes: format.pixelFormat.isCompressed ? 0 : stream.maximumFrameBytes,
            interFrameCoded: format.pixelFormat.isVideoCodec)
        for c in configuration.connections { c.output.attach(context) }
        let capture = CaptureThread(
            device: device, stream: stream, format: format, frameRate: configuration.frameRate,
            controls: controls, connections: configuration.connections, events: broadcaster, frameCounter: capturedFrames,
            fence: fence, timeline: timeline
        ) { [weak self] in self?.captureEnded() }
        state.withLock { $0.capture = capture }
        broadcaster.emit(.started(camera: device.id))
        capture.start()
    }

    /// Stops capture, finalizes every output (open segments are closed and renamed) and closes
    /// the camera. Returns when everything is written.
    public func stopRunning() {
        control.lock()
        defer { control.unlock() }
        guard let capture = state.withLock({ $0.capture }) else { return }
        capture.stop()
        finishStop()
    }

    /// `stopRunning()` for async callers: waits on a plain thread, not on Swift's cooperative pool.
    public func stop() async {
        await withCheckedContinuation { (done: CheckedContinuation<Void, Never>) in
            Thread.detachNewThread { [self] in
                stopRunning()
                done.resume()
            }
        }
    }

    /// The capture thread ended on its own (device lost or failed).
    private func captureEnded() {
        DispatchQueue.global().async { [self] in
            control.lock()
            defer { control.unlock() }
            guard state.withLock({ $0.capture })?.hasEnded == true else { return }
            finishStop()
        }
    }

    private static func resolveControls(_ values: [String: Int64], on device: CaptureDevice) throws(CaptureError) -> [ControlSetting] {
        var settings: [ControlSetting] = []
        for key in values.keys.sorted() {
            guard let control = device.control(key) else {
                let available = device.controls.map(\.key).joined(separator: ", ")
                throw .invalidSetting("camera \(device.id) has no control \(key)" + (available.isEmpty ? "" : "; it has \(available)"))
            }
            settings.append(ControlSetting(id: control.id, key: key, value: try control.validated(values[key]!, camera: device.id)))
        }
        return settings
    }

    private func finishStop() {
        guard let capture = state.withLock({ s -> CaptureThread? in
            defer { s.capture = nil }
            return s.capture
        }) else { return }
        capture.waitUntilEnded()
        for c in state.withLock({ $0.active.connections }) { c.output.detach() }
        broadcaster.emit(.stopped(camera: capture.device.id))
    }
}
