import Foundation
import CheckedMath
import Logging
import Media
import Synchronization
import SystemPackage

/// H.264 recording: raw frames converted, encoded with libx264, and each packet routed to the
/// segment its frame was captured in.
extension SegmentedMovieOutput {
    func encode(_ frame: CapturedFrame, _ connection: ConnectionSettings, _ encoderSettings: EncoderSettings, startsSegment: Bool) throws {
        let picture = try converter.picture(
            from: frame.bytes, format: frame.format, width: frame.width, height: frame.height,
            rotation: connection.rotation, mirrored: connection.isMirrored)
        var startsSegment = startsSegment
        let pictureFormat = picture.pixelFormat ?? .yuv420p
        if encoderKey == nil || encoderKey! != (picture.width, picture.height, pictureFormat) {
            // A new size needs a new encoder: finish the old one and its segment first.
            if encoder != nil {
                try encoder!.sendEndOfStream()
                try drainPackets()
                releaseHeld(all: true)
                closeSegment()
            }
            var settings = encoderSettings
            settings.threads = EncoderThreading.threads(configured: encoderSettings.threads)
            encoder = try VideoEncoder(
                width: picture.width, height: picture.height,
                framesPerSecond: context?.frameRate ?? 30, settings: settings, pixelFormat: pictureFormat)
            status.threads = settings.threads
            encoderKey = (picture.width, picture.height, pictureFormat)
            liveStream = encoder!.streamDescription()
            startsSegment = true
        }
        let pts = nextPTS(for: frame)
        inFlight.append((pts, frame.wallNanos, startsSegment))
        _ = try encoder!.send(picture, pts: pts, keyframe: startsSegment)
        try drainPackets()
    }

    /// Routes each packet to the segment its frame belongs to. A boundary frame was forced to be
    /// a keyframe; the old segment is closed only when that keyframe comes out of the encoder,
    /// so frames still inside the encoder land in the segment they were captured in.
    func drainPackets() throws {
        while try encoder!.receive(into: packet) == .ok {
            defer { packet.unref() }
            let pts = packet.pts
            guard let index = inFlight.firstIndex(where: { $0.pts == pts }) else { continue }
            let info = inFlight[index]
            inFlight.removeSubrange(0...index)
            if let preroll, let liveStream {
                // Motion only: held back; written when motion comes near it (`releaseHeld`).
                preroll.hold(
                    packet.bytes, pts: pts, presentationDelay: 0, keyframe: packet.isKeyframe, wallNanos: info.wallNanos,
                    stream: liveStream, container: settings.container, breaksBefore: info.startsSegment)
                releaseHeld(now: info.wallNanos)
            } else {
                // Only a forced keyframe opens a segment; while none is open after a failure,
                // packets are discarded until the retry's keyframe.
                if info.startsSegment {
                    closeSegment()
                    try openSegment(stream: encoder!.streamDescription(), startPTS: pts, wallNanos: info.wallNanos)
                }
                try write(packet, pts: pts, wallNanos: info.wallNanos)
            }
            // The live view shows every packet, recorded or held.
            if let feed = live.withLock({ $0 }), let liveStream {
                feed.append(packet.bytes, dts: pts, keyframe: packet.isKeyframe, stream: liveStream, wallNanos: info.wallNanos)
            }
        }
    }
}
