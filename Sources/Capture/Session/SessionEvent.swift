import Foundation
import Synchronization
import SystemPackage

/// What a session reports while it runs, like AVFoundation's session notifications.
public enum SessionEvent: Sendable, CustomStringConvertible {
    case started(camera: String)
    case stopped(camera: String)
    /// The camera stopped delivering; `cause` is the kind, `reason` the details in words.
    case interrupted(camera: String, cause: LossCause, reason: String)
    /// Frames flow again after `interrupted`; a stream that reconnects by itself (network) also
    /// sends it at its first frame, having been connecting until then.
    case interruptionEnded(camera: String)
    /// `errno` is the POSIX error behind it when there is one (`errno.isDiskFull`: the disk is full).
    case runtimeError(camera: String, message: String, errno: Errno? = nil)
    /// An output dropped `count` late frames since its last report.
    case droppedFrames(camera: String, output: String, count: Int)
    /// A segment file was created (as `path` + `.partial`); it is being written.
    case segmentStarted(camera: String, path: String, startWallNanos: Int64)
    case segmentFinished(camera: String, SegmentInfo)
    /// A segment whose writing failed before any frame reached the disk was removed: it has no file.
    case segmentDiscarded(camera: String, path: String)
    case stillSaved(camera: String, StillInfo)
    /// Motion detection saw an event begin (`startWallNanos`: when the motion began).
    case motionStarted(camera: String, startWallNanos: Int64)
    /// The event under way grew or has a new picture (at once when it starts, then every few seconds at most).
    case motionUpdated(camera: String, MotionEventInfo)
    case motionEnded(camera: String, MotionEventInfo)

    public var description: String {
        switch self {
        case .started(let c): return "\(c): started"
        case .stopped(let c): return "\(c): stopped"
        case .interrupted(let c, _, let r): return "\(c): interrupted: \(r)"
        case .interruptionEnded(let c): return "\(c): interruption ended"
        case .runtimeError(let c, let m, _): return "\(c): error: \(m)"
        case .droppedFrames(let c, let o, let n): return "\(c): \(o) dropped \(n) late frame(s)"
        case .segmentStarted(let c, let p, _): return "\(c): writing \(p)"
        case .segmentFinished(let c, let s): return "\(c): segment \(s.path) (\(s.frameCount) frames)"
        case .segmentDiscarded(let c, let p): return "\(c): removed \(p), no frame reached the disk"
        case .stillSaved(let c, let s): return "\(c): still \(s.path)"
        case .motionStarted(let c, _): return "\(c): motion"
        case .motionUpdated(let c, let e): return "\(c): motion goes on (peak \(Int(e.peakPercent.rounded())) % of the picture so far)"
        case .motionEnded(let c, let e): return "\(c): motion ended (peak \(Int(e.peakPercent.rounded())) % of the picture)"
        }
    }
}

/// A finished recording segment.
public struct SegmentInfo: Sendable, Equatable {
    public var path: String
    public var frameCount: Int
    public var byteCount: Int64
    /// Wall-clock capture times of the first and last frame (Unix epoch, nanoseconds).
    public var firstFrameWallNanos: Int64
    public var lastFrameWallNanos: Int64
    public var codec: String
    public var width: Int
    public var height: Int
    /// True when writing failed (disk full, I/O error) and the file holds only what was written.
    public var isIncomplete: Bool

    public init(
        path: String, frameCount: Int, byteCount: Int64, firstFrameWallNanos: Int64, lastFrameWallNanos: Int64,
        codec: String, width: Int, height: Int, isIncomplete: Bool
    ) {
        self.path = path
        self.frameCount = frameCount
        self.byteCount = byteCount
        self.firstFrameWallNanos = firstFrameWallNanos
        self.lastFrameWallNanos = lastFrameWallNanos
        self.codec = codec
        self.width = width
        self.height = height
        self.isIncomplete = isIncomplete
    }
}

/// A saved still.
public struct StillInfo: Sendable, Equatable {
    public var path: String
    /// The aligned instant the still stands for (Unix epoch, nanoseconds).
    public var shotWallNanos: Int64
    /// When the frame used was captured.
    public var frameWallNanos: Int64
    public var frameSequence: UInt64
}

/// Fans session events out to every subscriber of `CaptureSession.events`.
final class EventBroadcaster: Sendable {
    private let subscribers = Mutex<[UUID: AsyncStream<SessionEvent>.Continuation]>([:])

    func stream() -> AsyncStream<SessionEvent> {
        let (stream, continuation) = AsyncStream<SessionEvent>.makeStream(bufferingPolicy: .bufferingNewest(1024))
        let id = UUID()
        subscribers.withLock { $0[id] = continuation }
        continuation.onTermination = { [weak self] _ in
            _ = self?.subscribers.withLock { $0.removeValue(forKey: id) }
        }
        return stream
    }

    func emit(_ event: SessionEvent) {
        for c in subscribers.withLock({ Array($0.values) }) { c.yield(event) }
    }

    func finish() {
        for c in subscribers.withLock({ Array($0.values) }) { c.finish() }
    }
}
