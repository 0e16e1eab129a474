import Capture
import Foundation
import Synchronization
import SystemPackage

/// One event stream for the whole recorder: logged, and runnable as user hooks.
public enum RecorderEvent: Sendable, CustomStringConvertible {
    /// `cause` is the kind of loss (metrics count by it), `reason` the details in words.
    case cameraLost(camera: String, cause: LossCause, reason: String)
    case cameraFound(camera: String, node: String, reattachSeconds: Double?)
    case sessionStarted(camera: String)
    case sessionStopped(camera: String)
    case segmentStarted(camera: String, path: String, startWallNanos: Int64)
    case segmentFinalized(camera: String, SegmentInfo)
    /// Writing failed before any frame of a segment reached the disk: its `.partial` was removed
    /// and nothing of it is kept (nor indexed).
    case segmentDiscarded(camera: String, path: String)
    /// A timelapse still (`shotWallNanos` is its aligned instant) or a snapshot (nil).
    case stillSaved(camera: String, path: String, shotWallNanos: Int64?)
    /// Retention or the free-space sweep deleted a recording.
    case recordingDeleted(camera: String, path: String, reason: String)
    case framesDropped(camera: String, output: String, count: Int)
    /// Motion detection (`[[motion]]`) saw an event begin; `startWallNanos` is when the motion began.
    case motionStarted(camera: String, startWallNanos: Int64)
    /// The event under way grew or has a new picture: its index row shows it. Not a hook (it
    /// comes every few seconds while motion lasts); logged at debug level.
    case motionUpdated(camera: String, MotionEventInfo)
    case motionEnded(camera: String, MotionEventInfo)
    case diskLow(path: String, freeBytes: Int64)
    /// `errno` is the POSIX error behind it when there is one (`errno.isDiskFull`: the disk is full).
    case error(camera: String, message: String, errno: Errno? = nil)

    /// The name used for hooks (`--hook camera_lost=…`) and logs.
    public var name: String {
        switch self {
        case .cameraLost: return "camera_lost"
        case .cameraFound: return "camera_found"
        case .sessionStarted: return "session_started"
        case .sessionStopped: return "session_stopped"
        case .segmentStarted: return "segment_started"
        case .segmentFinalized: return "segment_finalized"
        case .segmentDiscarded: return "segment_discarded"
        case .stillSaved: return "still_saved"
        case .framesDropped: return "frames_dropped"
        case .recordingDeleted: return "recording_deleted"
        case .motionStarted: return "motion_start"
        case .motionUpdated: return "motion_update"
        case .motionEnded: return "motion_end"
        case .diskLow: return "disk_low"
        case .error: return "error"
        }
    }

    public static let names = ["camera_lost", "camera_found", "session_started", "session_stopped", "segment_started",
                               "segment_finalized", "segment_discarded", "still_saved", "frames_dropped", "recording_deleted", "motion_start", "motion_end",
                               "disk_low", "error"]

    public var camera: String? {
        switch self {
        case .cameraLost(let c, _, _), .cameraFound(let c, _, _), .sessionStarted(let c), .sessionStopped(let c),
             .segmentStarted(let c, _, _), .segmentFinalized(let c, _), .segmentDiscarded(let c, _), .stillSaved(let c, _, _), .framesDropped(let c, _, _),
             .recordingDeleted(let c, _, _), .motionStarted(let c, _), .motionUpdated(let c, _), .motionEnded(let c, _), .error(let c, _, _):
            return c
        case .diskLow: return nil
        }
    }

    /// Environment variables a hook sees: VIGIL_EVENT, VIGIL_CAMERA, VIGIL_FILE, VIGIL_REASON,
    /// VIGIL_CAUSE (a lost camera's kind of loss: unplugged, stalled, unreachable, …), …
    public var environment: [String: String] {
        var env = ["VIGIL_EVENT": name]
        if let camera { env["VIGIL_CAMERA"] = camera }
        switch self {
        case .cameraLost(_, let cause, let reason):
            env["VIGIL_REASON"] = reason
            env["VIGIL_CAUSE"] = cause.rawValue
        case .cameraFound(_, let node, _): env["VIGIL_NODE"] = node
        case .segmentStarted(_, let path, _), .segmentDiscarded(_, let path), .stillSaved(_, let path, _): env["VIGIL_FILE"] = path
        case .segmentFinalized(_, let info): env["VIGIL_FILE"] = info.path
        case .recordingDeleted(_, let path, let reason):
            env["VIGIL_FILE"] = path
            env["VIGIL_REASON"] = reason
        case .framesDropped(_, let output, let count):
            env["VIGIL_OUTPUT"] = output
            env["VIGIL_COUNT"] = String(count)
        case .diskLow(let path, let free):
            env["VIGIL_FILE"] = path
            env["VIGIL_FREE_BYTES"] = String(free)
        case .error(_, let message, _): env["VIGIL_REASON"] = message
        case .motionStarted(_, let start): env["VIGIL_START"] = Self.iso(start)
        case .motionEnded(_, let info):
            env["VIGIL_START"] = Self.iso(info.startWallNanos)
            env["VIGIL_END"] = Self.iso(info.endWallNanos)
            env["VIGIL_PEAK_PERCENT"] = String(format: "%.1f", info.peakPercent)
            if let picture = info.picturePath { env["VIGIL_FILE"] = picture }
        default: break
        }
        return env
    }

    /// An instant for hooks: UTC, ISO 8601 with milliseconds (2026-11-22T06:57:00.250Z).
    public static func iso(_ wallNanos: Int64) -> String {
        let formatter = ISO8601DateFormatter()
        formatter.formatOptions = [.withInternetDateTime, .withFractionalSeconds]
        return formatter.string(from: Date(timeIntervalSince1970: Double(wallNanos) / 1e9))
    }

    public var description: String {
        switch self {
        case .cameraLost(let c, _, let r): return "\(c): camera lost: \(r)"
        case .cameraFound(let c, let n, let s): return "\(c): camera found on \(n)" + (s.map { String(format: ", recording again %.3f s after it reappeared", $0) } ?? "")
        case .sessionStarted(let c): return "\(c): recording"
        case .sessionStopped(let c): return "\(c): stopped"
        case .segmentStarted(let c, let p, _): return "\(c): writing \(p)"
        case .segmentFinalized(let c, let info): return "\(c): segment \(info.path) (\(info.frameCount) frames)"
        case .segmentDiscarded(let c, let p): return "\(c): removed \(p): writing failed before any frame reached the disk"
        case .stillSaved(let c, let p, _): return "\(c): still \(p)"
        case .recordingDeleted(let c, let p, let r): return "\(c): deleted \(p) (\(r))"
        case .framesDropped(let c, let o, let n): return "\(c): \(o) dropped \(n) frame(s): its queue was full (it fell behind the camera)"
        case .motionStarted(let c, _): return "\(c): motion"
        case .motionUpdated(let c, let e): return "\(c): motion goes on, " + String(format: "peak %.1f %% of the picture so far", e.peakPercent)
        case .motionEnded(let c, let e):
            return "\(c): motion ended after " + String(format: "%.1f s, peak %.1f %% of the picture", Double(e.endWallNanos - e.startWallNanos) / 1e9, e.peakPercent)
        case .diskLow(let p, let f): return "disk low under \(p): \(f / 1_048_576) MiB free"
        case .error(let c, let m, _): return "\(c): \(m)"
        }
    }
}

/// Fans recorder events out to subscribers.
public final class RecorderEvents: Sendable {
    private let subscribers = Mutex<[UUID: AsyncStream<RecorderEvent>.Continuation]>([:])
    private let handlers = Mutex<[UUID: @Sendable (RecorderEvent) -> Void]>([:])

    public init() {}

    public func stream() -> AsyncStream<RecorderEvent> {
        let (stream, continuation) = AsyncStream<RecorderEvent>.makeStream(bufferingPolicy: .bufferingNewest(1024))
        let id = UUID()
        subscribers.withLock { $0[id] = continuation }
        continuation.onTermination = { [weak self] _ in _ = self?.subscribers.withLock { $0.removeValue(forKey: id) } }
        return stream
    }

    /// Calls `handler` on the emitting thread, before `emit` returns, for every event from now on:
    /// once every emitter is done, everything has been handed over (no stream buffer in between).
    /// The handler must only hand the event on (e.g. enqueue it); `unsubscribe(id)` ends it.
    func subscribe(_ handler: @escaping @Sendable (RecorderEvent) -> Void) -> UUID {
        let id = UUID()
        handlers.withLock { $0[id] = handler }
        return id
    }

    func unsubscribe(_ id: UUID) {
        _ = handlers.withLock { $0.removeValue(forKey: id) }
    }

    public func emit(_ event: RecorderEvent) {
        for h in handlers.withLock({ Array($0.values) }) { h(event) }
        for c in subscribers.withLock({ Array($0.values) }) { c.yield(event) }
    }

    /// Ends every subscriber's stream after the events already sent: a subscriber's loop then
    /// handles what is left and ends (shutdown).
    public func finish() {
        for c in subscribers.withLock({ Array($0.values) }) { c.finish() }
    }
}
