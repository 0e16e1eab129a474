import CheckedMath
import Logging
import Media
import Plumbing

/// The capture side of a network camera, driven by its session's capture thread: connects,
/// reads pictures as frames (no decoding; see `PictureConnections`), notices stalls, and
/// reconnects on the same ladder as a USB camera (about 1 s, 5 s, 10 s, then 60 s, with
/// jitter), also when the camera is down at start. A lost connection is torn down completely
/// before the next attempt. The ladder is the camera's (`RetrySchedule`), not the session's:
/// a restarted session goes on where the last one left off. Every failure climbs it, a wrong
/// password (401) like any other; only a connection that delivered frames for
/// `healthyNanos` brings it back to its first rung. The session hears of a loss once
/// (`.interrupted`, and again if the cause changes) and of frames flowing once (`.resumed`,
/// after the first frame of a connection); each attempt in between is a debug line.
final class NetworkStream: CaptureStream {
    private let url: String
    private let address: String
    private let settings: NetworkCamera.Settings
    private let retries: RetrySchedule
    private let interrupt = NetworkInterrupt()
    private var source: (any PictureConnection)?
    /// The camera sends what only libavformat depacketizes (e.g. MJPEG over RTSP).
    private var needsDemuxer = false
    /// The last loss reported to the session (nil while frames flow and the session knows it).
    private var reportedLoss: NetworkFailure?
    /// Whether the session was told that frames flow since it started or since the last loss.
    private var toldFlowing = false
    /// When the current connection delivered its first frame (nil: not yet).
    private var firstFrameArrival: Int64?
    /// Whether the current connection has put the ladder back on its first rung.
    private var ladderReset = false
    /// The stream frames belong to (its parameter sets may come from the first keyframe).
    private var stream: StreamDescription?
    private var format: PixelFormat = .h264
    private var clock = CameraClock()
    private var lastVideoArrival: Int64 = 0
    private var lastKeyframeArrival: Int64?
    private var keyframeInterval: Int64 = 0
    private var sequence: UInt64 = 0
    private var parameterSets = ParameterSetTracker()
    private let logger = Logger(label: "vigil.network")

    /// A first guess; frames grow (once) when a camera sends larger packets.
    let maximumFrameBytes = 512 * 1024
    var abortHandle: (any AbortHandle)? { interrupt }

    /// Frames for this long make a connection healthy: the next loss starts the ladder again.
    static let healthyNanos: Int64 = 10_000_000_000

    init(url: String, settings: NetworkCamera.Settings, retries: RetrySchedule) {
        self.url = url
        address = redactedAddress(url)
        self.settings = settings
        self.retries = retries
    }

    /// No video for this long is a stall: `max(minimum, two keyframe intervals)`.
    var stallLimitNanos: Int64 { max(settings.minimumStallNanos, 2 * keyframeInterval) }

    func readFrame(into frame: CapturedFrame, timeoutNanos: Int64) throws -> ReadResult {
        if interrupt.isAborted { return .timeout }
        guard let source else { return connectWhenDue(timeoutNanos: timeoutNanos) }
        if firstFrameArrival != nil && !toldFlowing {
            // Said after the connection's first frame: "found" means that frames flow.
            toldFlowing = true
            reportedLoss = nil
            return .resumed
        }
        let picture: NetworkPicture
        do {
            picture = try source.readPicture(into: frame, deadlineNanos: lastVideoArrival + stallLimitNanos)
        } catch {
            return error.failure == .aborted ? .timeout : lose(stallOr(error.failure))
        }
        let now = SystemClocks.monotonicNanos()
        let nowWall = SystemClocks.wallNanos()
        lastVideoArrival = now
        noteFrame(at: now)
        // A picture the client held back (the first keyframe, while it looked ahead) is placed
        // by when it arrived, not when it was handed over.
        let heldNanos = picture.arrivalMonotonic.map { min(max(now - $0, 0), 10_000_000_000) } ?? 0
        let arrival = now - heldNanos
        let arrivalWall = nowWall - heldNanos
        if picture.keyframe && format != .mjpeg {
            if let last = lastKeyframeArrival { keyframeInterval = arrival - last }
            lastKeyframeArrival = arrival
            stream = parameterSets.update(stream, keyframe: UnsafeRawBufferPointer(rebasing: frame.storage[..<picture.byteCount]), format: format)
        }
        // Decode times space the frames: they rise in the order frames arrive, where B-frames
        // make presentation times go back and forth. The first frames of a connection may come
        // without one (the demuxer learns the reordering depth first): stamped on arrival.
        let time = clock.place(cameraTicks: picture.dts, arrivalMonotonic: arrival, arrivalWall: arrivalWall)
        if time.jumped {
            clockRun &+= 1
            noteTimestampJump()
        }
        if time.distrusted {
            logger.warning("\(address): the camera's timestamps jumped more than \(CameraClock.jumpsBeforeDistrust) times in \(CameraClock.jumpWindowNanos / 1_000_000_000) s; its frames are spaced by their arrival from here on, in one file, until it reconnects")
        }
        frame.setContents(
            byteCount: picture.byteCount, format: format, width: stream?.width ?? 0, height: stream?.height ?? 0,
            sequence: sequence, monotonicNanos: time.monotonic, wallNanos: time.wall,
            keyframe: picture.keyframe, stream: format == .mjpeg ? nil : stream, followsDiscontinuity: time.discontinuity,
            clockRun: clockRun,
            presentationDelayNanos: Self.presentationDelay(picture))
        sequence += 1
        return .frame
    }

    /// pts − dts in nanoseconds (times in 1/90000 s); 0 without B-frames, without both times,
    /// or for a delay no camera has (over 10 s: broken timestamps, not reordering).
    private static func presentationDelay(_ picture: NetworkPicture) -> Int64 {
        guard let pts = picture.pts, let dts = picture.dts, let ticks = pts.subtracting(dts), ticks > 0, ticks <= 900_000 else { return 0 }
        return Nanoseconds.from(ticks: ticks, clockRate: 90_000) ?? 0
    }

    /// Timestamp jumps of this connection so far: the first is a warning, the rest debug lines.
    private var timestampJumps = 0
    /// The run of the camera's clock its frames are in: one more at each jump (`CapturedFrame.clockRun`).
    private var clockRun: UInt32 = 0

    private func noteTimestampJump() {
        timestampJumps += 1
        let text = "\(address): the camera's timestamps jumped (back, repeated, or more than \(CameraClock.jumpLimitNanos / 1_000_000_000) s from their arrival); Vigil's times for it start again from their arrival, and a new file from the next keyframe (\(timestampJumps) so far on this connection)"
        if timestampJumps == 1 { logger.warning("\(text)") } else { logger.debug("\(text)") }
    }

    /// The connection's first frame, and once it has delivered frames for `healthyNanos`, the
    /// camera back on the ladder's first rung: a camera that sends a picture and drops, again
    /// and again, keeps climbing the ladder instead of being retried every second.
    private func noteFrame(at arrival: Int64) {
        guard let first = firstFrameArrival else {
            firstFrameArrival = arrival
            return
        }
        if !ladderReset && arrival - first >= Self.healthyNanos {
            ladderReset = true
            retries.reset()
        }
    }

    /// A read that reached its deadline means no video for the stall limit.
    private func stallOr(_ failure: NetworkFailure) -> NetworkFailure {
        failure == .timeout ? .stalled(seconds: Double(stallLimitNanos) / 1e9) : failure
    }

    /// Tears the connection down and schedules the next attempt.
    private func lose(_ failure: NetworkFailure) -> ReadResult {
        source = nil
        stream = nil
        parameterSets = ParameterSetTracker()
        clock = CameraClock()
        lastKeyframeArrival = nil
        keyframeInterval = 0
        timestampJumps = 0
        firstFrameArrival = nil
        ladderReset = false
        return retryLater(after: failure)
    }

    private func connectWhenDue(timeoutNanos: Int64) -> ReadResult {
        let now = SystemClocks.monotonicNanos()
        let due = retries.nextAttemptMonotonic
        if now < due {
            SystemClocks.sleep(untilMonotonic: min(due, now + timeoutNanos))
            return .timeout
        }
        do {
            let connection = try PictureConnections.open(url: url, settings: settings, interrupt: interrupt, needsDemuxer: &needsDemuxer)
            guard let format = connection.format else {
                return retryLater(after: .other("sends \(connection.stream.codecName), which Vigil records only as H.264, H.265 or MJPEG"))
            }
            self.format = format
            stream = connection.stream
            source = connection
            lastVideoArrival = SystemClocks.monotonicNanos()
            logger.info("\(address): connected, \(connection.stream.codecName) \(connection.stream.width)x\(connection.stream.height)")
            return .timeout
        } catch {
            if error.failure == .aborted { return .timeout }
            return retryLater(after: error.failure)
        }
    }

    private func retryLater(after failure: NetworkFailure) -> ReadResult {
        let delay = retries.recordFailure(at: SystemClocks.monotonicNanos())
        // Said once per outage, and again when the cause changes; each attempt is a debug line.
        logger.debug("\(address): \(failure); next attempt in \(String(format: "%.1f", delay)) s")
        guard reportedLoss != failure else { return .timeout }
        reportedLoss = failure
        toldFlowing = false
        return .interrupted(failure.lossCause, "\(address): \(failure)")
    }

    func close() {
        interrupt.abort()
        source = nil
    }
}
