@testable import Capture
import CaptureTesting
import Foundation
import Media
import Testing

/// The motion output on what cameras send besides raw frames: an H.264 network camera (every
/// frame decoded, a few analysed) whose test picture is a bouncing ball.
@Suite(.serialized, .timeLimit(.minutes(2))) struct MotionOutputTests {
    @Test func aBouncingBallOverRTSPIsAnEventWithAPictureDecodedFromTheStream() async throws {
        let server = try LoopbackCameraServer.rtsp(codec: "h264")
        defer { server.stop() }
        let dir = try TemporaryDirectory()
        defer { dir.remove() }
        var settings = MotionSettings()
        settings.gapSeconds = 1
        let motion = MotionOutput(.init(motion: settings, storageRoot: dir.path))
        let device = NetworkCamera.device(id: "ball", url: server.url(), settings: NetworkCameraTests.fast)
        let (session, log) = try startSession(device: device, format: .preset(.high), fps: 15, outputs: [(motion, .init())])
        #expect(await waitUntil(seconds: 30) {
            log.all.contains { if case .motionStarted = $0 { true } else { false } } && motion.analysedCount >= 10
        })
        await stopAndDrain(session, log)
        // Stopping ends the event under way, with the picture of its peak.
        let ended = log.all.compactMap { if case .motionEnded(_, let info) = $0 { return info } else { return nil } }
        try #require(ended.count == 1, "\(log.all)")
        #expect(ended[0].peakPercent >= settings.minAreaPercent)
        let picture = try #require(ended[0].picturePath)
        #expect(picture.hasPrefix(dir.path + "/ball/events/") && picture.hasSuffix(".jpg"))
        #expect(RecordingInspector.ffprobeProblem(picture) == nil)
        #expect(SegmentProbe.dimensions(picture) == "160x120")
    }

    /// The ball never stops: the event under way is reported with its peak and picture long
    /// before it ends, and cut at `max_seconds`, the next event beginning where it ended.
    @Test func motionThatNeverStopsIsReportedWhileUnderWayAndCutAtItsMaximum() async throws {
        let server = try LoopbackCameraServer.rtsp(codec: "h264")
        defer { server.stop() }
        let dir = try TemporaryDirectory()
        defer { dir.remove() }
        var settings = MotionSettings()
        settings.maxSeconds = 3
        let motion = MotionOutput(.init(motion: settings, storageRoot: dir.path))
        let device = NetworkCamera.device(id: "ball", url: server.url(), settings: NetworkCameraTests.fast)
        let (session, log) = try startSession(device: device, format: .preset(.high), fps: 15, outputs: [(motion, .init())])
        func updates() -> [MotionEventInfo] { log.all.compactMap { if case .motionUpdated(_, let info) = $0 { info } else { nil } } }
        func ended() -> [MotionEventInfo] { log.all.compactMap { if case .motionEnded(_, let info) = $0 { info } else { nil } } }
        // The first event's report, before it ended: its size and a picture on disk.
        #expect(await waitUntil(seconds: 30) { !updates().isEmpty })
        let first = try #require(updates().first)
        #expect(first.peakPercent >= settings.minAreaPercent)
        let picture = try #require(first.picturePath, "an event under way has its picture")
        #expect(RecordingInspector.ffprobeProblem(picture) == nil)
        // Cut at 3 s, while the ball still moves; the next event begins at the cut.
        #expect(await waitUntil(seconds: 30) {
            let cut = ended().first
            return cut.map { c in log.all.contains { if case .motionStarted(_, c.endWallNanos) = $0 { true } else { false } } } ?? false
        })
        await stopAndDrain(session, log)
        let events = ended()
        try #require(events.count >= 2, "\(log.all)")
        #expect(Double(events[0].endWallNanos - events[0].startWallNanos) / 1e9 >= settings.maxSeconds)
        #expect(events[0].startWallNanos == first.startWallNanos && events[0].picturePath == picture, "the picture stays at one path")
        #expect(events[1].startWallNanos == events[0].endWallNanos)
        let reported = log.all.firstIndex { if case .motionUpdated = $0 { true } else { false } }
        let firstEnd = log.all.firstIndex { if case .motionEnded = $0 { true } else { false } }
        #expect(reported! < firstEnd!, "the event was reported while under way, not only at its end")
    }

    /// Masks are drawn on the picture as recorded; the detector sees the camera's own picture.
    @Test func maskCornersAreTurnedBackIntoTheCamerasPicture() {
        let corner = MotionSettings.Point(x: 0.9, y: 0.1)  // top right, as shown
        func camera(_ r: Rotation, _ m: Bool = false) -> (Double, Double) {
            let p = MotionOutput.cameraPoint(corner, rotation: r, mirrored: m)
            return ((p.x * 10).rounded() / 10, (p.y * 10).rounded() / 10)
        }
        #expect(camera(.none) == (0.9, 0.1))
        #expect(camera(.none, true) == (0.1, 0.1))
        // Turned a quarter clockwise (as PictureTransform turns it), the shown top right was the
        // camera's top left.
        #expect(camera(.clockwise90) == (0.1, 0.1))
        #expect(camera(.upsideDown) == (0.1, 0.9))
        #expect(camera(.clockwise270) == (0.9, 0.9))
    }
}
