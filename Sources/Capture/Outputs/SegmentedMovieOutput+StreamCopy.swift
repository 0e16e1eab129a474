import Foundation
import CheckedMath
import Logging
import Media
import Synchronization
import SystemPackage

/// Stream copy: the camera's compressed frames (MJPEG, H.264, H.265) written as they are.
extension SegmentedMovieOutput {
    /// Copies a compressed frame as it is. A segment starts only at a keyframe: when a new
    /// segment is due (a wall-clock boundary, new stream parameters) frames go on into the old
    /// segment until the next keyframe, which opens the new one, so no frame is lost or repeated
    /// at a boundary. A frame that `breaks` the timeline (a gap, or camera times that could not
    /// stay increasing) ends the segment before it.
    func copy(_ frame: CapturedFrame, startsSegment: Bool, breaks: Bool) throws {
        if frame.format == .mjpeg && !JPEGCheck.looksComplete(frame.bytes) {
            logger.warning("camera \(context?.cameraID ?? "?"): dropped a truncated or corrupt MJPEG frame (\(frame.byteCount) bytes)")
            return
        }
        if frame.format.isVideoCodec {
            if let last = lastCopiedSequence, frame.sequence != last &+ 1, !frame.isKeyframe { skipsToKeyframe = true }
            lastCopiedSequence = frame.sequence
            if skipsToKeyframe && frame.isKeyframe {
                skipsToKeyframe = false
                logger.warning("camera \(context?.cameraID ?? "?"): \(framesSkippedAfterLoss) frame(s) after a dropped one could not be decoded and were skipped up to this keyframe")
                framesSkippedAfterLoss = 0
            }
            if skipsToKeyframe {
                framesSkippedAfterLoss += 1
                return
            }
        }
        let stream = frame.stream ?? mjpegDescription(width: frame.width, height: frame.height)
        if let preroll {
            // Motion only: held back; segments are opened and cut when it is released.
            if breaks {
                originMonotonic = nil
                lastPTS = .min
            }
            preroll.hold(
                frame.bytes, pts: nextPTS(for: frame), presentationDelay: frame.presentationDelayNanos * 9 / 100_000,
                keyframe: frame.isKeyframe, wallNanos: frame.wallNanos, stream: stream,
                container: settings.container(for: frame.format), breaksBefore: breaks)
            releaseHeld(now: frame.wallNanos)
            return
        }
        if let open = segment, open.stream !== stream, !open.stream.matches(stream) {
            // The old segment cannot take packets of other parameters.
            closeSegment()
            cutPending = true
        }
        if breaks {
            // A gap, or the camera's times broke: end here, and time the next segment afresh.
            closeSegment()
            originMonotonic = nil
            lastPTS = .min
        }
        if startsSegment || breaks { cutPending = true }
        if cutPending && frame.isKeyframe {
            cutPending = false
            let pts = nextPTS(for: frame)
            closeSegment()
            try openSegment(stream: stream, container: settings.container(for: frame.format), startPTS: pts, wallNanos: frame.wallNanos)
            if framesBeforeKeyframe > 0 {
                logger.notice("camera \(context?.cameraID ?? "?"): \(framesBeforeKeyframe) frame(s) before the first keyframe could not start a segment and were skipped")
                framesBeforeKeyframe = 0
            }
            try write(frame, pts: pts)
            return
        }
        guard segment != nil else {
            if cutPending { framesBeforeKeyframe += 1 }
            return
        }
        try write(frame, pts: nextPTS(for: frame))
    }

    /// Copies a camera's packet; `pts` is its decode time on the segment's clock, and a frame
    /// that B-frames follow is shown its `presentationDelayNanos` later.
    func write(_ frame: CapturedFrame, pts: Int64) throws {
        packet.borrow(frame.bytes, pts: pts, keyframe: frame.isKeyframe)
        defer { packet.unref() }
        try write(packet, pts: pts, presentationDelay: frame.presentationDelayNanos * 9 / 100_000, wallNanos: frame.wallNanos)
    }

    func mjpegDescription(width: Int, height: Int) -> StreamDescription {
        if let d = mjpegStream, d.width == width, d.height == height { return d }
        let d = StreamDescription(mjpegWidth: width, height: height)
        mjpegStream = d
        return d
    }
}

/// Which run of its camera's clock each frame belongs to (`CapturedFrame.clockRun`): when the run
/// changes (the camera's clock jumped), the next keyframe starts a new file, and the frames before
/// it go on in the open one. Compared run by run, so a jump on a frame that was dropped or
/// skipped is seen on the next one.
struct ClockRunWatch {
    private var last: UInt32?
    private var pending = false

    /// Whether `frame` is the first keyframe of a new run.
    mutating func startsFile(_ frame: CapturedFrame) -> Bool {
        if let last, last != frame.clockRun { pending = true }
        last = frame.clockRun
        guard pending && frame.isKeyframe else { return false }
        pending = false
        return true
    }
}
