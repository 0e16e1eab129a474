import Foundation
import Media
import Synchronization
import SystemPackage

/// Saves a JPEG still every `intervalSeconds` at wall-clock-aligned instants: shot k is at
/// t0 + k·N however long encoding takes (fswebcam's `--loop`, not "sleep N after each shot").
/// A gap (camera stalled, clock stepped) skips the missed shots and says so; it never takes a burst.
/// @unchecked as its base class: its own state is touched only on its worker thread.
public final class TimelapseOutput: CaptureOutput, @unchecked Sendable {
    public struct Settings: Sendable {
        public var storageRoot: String
        public var intervalSeconds: Int
        /// JPEG quality 1–100 (used when the still has to be encoded).
        public var quality: Int
        /// Shots are taken only at instants inside this schedule (nil: always).
        public var schedule: (any OutputSchedule)?

        public init(storageRoot: String, intervalSeconds: Int = 60, quality: Int = 90, schedule: (any OutputSchedule)? = nil) {
            self.storageRoot = storageRoot
            self.intervalSeconds = intervalSeconds
            self.quality = quality
            self.schedule = schedule
        }
    }

    public let settings: Settings
    private let intervalNanos: Int64
    /// How late a frame may be and still stand for an instant (half the interval, at most 2 s).
    private let lateness: Int64
    /// Capture-thread state: the next aligned instant to shoot.
    private var nextShotNanos: Int64?
    /// Capture-thread state: whether an instant is inside the schedule.
    private var gate: ScheduleGate
    private let skipped = Atomic<Int>(0)
    private let stills = StillMaker()
    /// H.264/H.265 (worker thread): the frames since the last keyframe, still compressed.
    private var run = CompressedRun()

    public init(_ settings: Settings) throws(CaptureError) {
        guard settings.intervalSeconds >= 1 else {
            throw .invalidSetting("timelapse interval must be at least 1 second, not \(settings.intervalSeconds)")
        }
        guard (1...100).contains(settings.quality) else {
            throw .invalidSetting("JPEG quality must be 1–100, not \(settings.quality)")
        }
        self.settings = settings
        intervalNanos = Int64(settings.intervalSeconds) * 1_000_000_000
        lateness = min(intervalNanos / 2, 2_000_000_000)
        gate = ScheduleGate(settings.schedule)
        // Room for a camera's H.264 frames while a still is decoded (raw frames are queued only at shots).
        super.init(name: "timelapse", queueCapacity: 30, dropsLateFrames: true)
    }

    /// Between stills this far apart the output keeps no pictures or encoder (making them again
    /// costs far less than a still); closer stills keep them.
    static let releaseBuffersFromSeconds = 5

    /// Whether pictures or an encoder are kept for the next still.
    var holdsStillBuffers: Bool { stills.holdsBuffers }

    /// Shots that could not be taken (no frame near their instant).
    public var skippedShotCount: Int { skipped.load(ordering: .relaxed) }

    /// The aligned instant a frame captured at `wallNanos` stands for.
    func shotInstant(_ wallNanos: Int64) -> Int64 { wallNanos / intervalNanos * intervalNanos }

    /// H.264/H.265 frames all go to the worker, which keeps the run since the last keyframe and
    /// decides shots there (a still needs that run); other frames only at their instants.
    override func accepts(_ frame: CapturedFrame) -> Bool {
        frame.format.isVideoCodec || isShot(frame)
    }

    /// Whether `frame` stands for the next aligned instant. Called by one thread: the capture
    /// thread for raw and MJPEG frames, the worker for H.264/H.265.
    private func isShot(_ frame: CapturedFrame) -> Bool {
        let wall = frame.wallNanos
        let instant = shotInstant(wall)
        guard let next = nextShotNanos else {
            // First frame: shoot only if it sits exactly on an instant; otherwise wait for the next one.
            nextShotNanos = instant == wall ? instant : instant + intervalNanos
            return instant == wall && gate.isActive(at: instant)
        }
        if wall < next - intervalNanos {
            // The wall clock stepped back: resume at the next instant after now, no burst.
            nextShotNanos = instant + intervalNanos
            return false
        }
        guard wall >= next else { return false }
        // Instants passed without a frame (camera unplugged, stalled, clock stepped forward) are
        // skipped, and so is this one if its frame comes too late to stand for it. Instants
        // outside the schedule are not shots at all, so they are never counted as missed.
        var missed = gate.activeInstants(from: next, before: instant, step: intervalNanos)
        let onTime = wall - instant <= lateness
        let scheduled = gate.isActive(at: instant)
        if !onTime && scheduled { missed += 1 }
        if missed > 0 {
            skipped.add(missed, ordering: .relaxed)
            logger.warning("camera \(context?.cameraID ?? "?"): timelapse skipped \(missed) shot(s): no frame arrived at their instants")
        }
        nextShotNanos = instant + intervalNanos
        return onTime && scheduled
    }

    override func process(_ frame: CapturedFrame, _ connection: ConnectionSettings) {
        guard let context else { return }
        let instant = shotInstant(frame.wallNanos)
        var compressed = false
        if frame.format.isVideoCodec {
            let usable = run.add(frame)
            guard isShot(frame) else { return }
            guard usable, frame.stream != nil else {
                skipped.add(1, ordering: .relaxed)
                logger.warning("camera \(context.cameraID): timelapse skipped a shot: no keyframe since a frame was lost")
                return
            }
            compressed = true
        }
        do {
            let path = try StorageLayout(root: settings.storageRoot).still(camera: context.cameraID, at: instant)
            let write = { (bytes: UnsafeRawBufferPointer, _: Int, _: Int) in try DurableFile.write(bytes, to: path) }
            if compressed {
                try run.withFrames { try stills.jpeg(ofRun: $0, stream: frame.stream!, connection, quality: settings.quality, write) }
            } else {
                try stills.jpeg(of: frame, connection, quality: settings.quality, write)
            }
            emit(.stillSaved(camera: context.cameraID, StillInfo(
                path: path, shotWallNanos: instant, frameWallNanos: frame.wallNanos, frameSequence: frame.sequence)))
            if settings.intervalSeconds >= Self.releaseBuffersFromSeconds { stills.releaseBuffers() }
        } catch {
            let diskFull = (error as? CaptureError)?.isDiskFull == true
            let message = "timelapse still at \(StorageLayout.utcStamp(instant).stamp) not saved: \(error)"
                + (diskFull ? "; free space under \(settings.storageRoot)" : "")
            logger.error("camera \(context.cameraID): \(message)")
            emit(.runtimeError(camera: context.cameraID, message: message, errno: (error as? CaptureError)?.errno))
        }
    }

    /// The cadence survives a session stopping: after a reattach the shots missed meanwhile are
    /// counted as skipped, never taken late or twice.
    override func finish() { run.reset() }

    override func streamLost() { run.reset() }
}

/// The H.264/H.265 frames since the last keyframe, kept compressed in one reused buffer.
struct CompressedRun {
    private var bytes: [UInt8] = []
    private var ends: [Int] = []
    private var lastSequence: UInt64?
    private var intact = false

    /// Adds a frame; false while the run is unusable (no keyframe yet, or a frame was dropped since).
    mutating func add(_ frame: CapturedFrame) -> Bool {
        if frame.isKeyframe {
            bytes.removeAll(keepingCapacity: true)
            ends.removeAll(keepingCapacity: true)
            intact = true
        } else if let last = lastSequence, frame.sequence != last &+ 1 {
            intact = false
        }
        lastSequence = frame.sequence
        guard intact else { return false }
        bytes.append(contentsOf: frame.bytes)
        ends.append(bytes.count)
        return true
    }

    mutating func reset() {
        intact = false
        lastSequence = nil
    }

    func withFrames<R>(_ body: ([UnsafeRawBufferPointer]) throws -> R) rethrows -> R {
        try bytes.withUnsafeBytes { all in
            var start = 0
            let frames = ends.map { end in
                defer { start = end }
                return UnsafeRawBufferPointer(rebasing: all[start..<end])
            }
            return try body(frames)
        }
    }
}
