import Capture
import CaptureTesting
import Foundation
import Recorder
import Testing

/// Motion detection as a user switches it on: a `[[motion]]` table, a camera filming a scripted
/// scene, events in the index with their picture, and the hooks.
@Suite(.timeLimit(.minutes(3))) struct MotionRecorderTests {
    /// A square crosses the lower half from 3 s to 6 s; another crosses the masked top band
    /// from 8 s to 10 s; the light switches on at 11 s. One event, and only one, is right.
    @Test func aScriptedObjectMakesOneEventWithItsPictureAndHooksAndTheMaskedOneAndTheLightNone() async throws {
        let dir = try TemporaryDirectory("vigil-motion")
        defer { dir.remove() }
        let scene = SyntheticScene(
            objects: [.init(enters: 3, leaves: 6, top: 0.6), .init(enters: 8, leaves: 10, top: 0.02)], lightSwitchAt: 11)
        let file = dir.path + "/vigil.toml"
        let hookLog = dir.path + "/hooks.txt"
        try """
            [storage]
            root = "\(dir.path)/data"
            [hooks]
            motion_start = "echo \\"start $VIGIL_CAMERA $VIGIL_START\\" >> \(hookLog)"
            motion_end = "echo \\"end $VIGIL_START $VIGIL_END $VIGIL_PEAK_PERCENT $VIGIL_FILE\\" >> \(hookLog)"
            [cameras.yard]
            device = "synthetic-scene-0"
            size = "640x480"
            pixel_format = "mjpeg"
            fps = 10
            [[motion]]
            camera = "yard"
            gap_seconds = 1
            mask = ["0,0 100%,0 100%,30% 0,30%"]
            """.write(toFile: file, atomically: true, encoding: .utf8)
        var options = RecorderService.Options(configurationPath: file)
        options.deviceSource = SyntheticDeviceSource(count: 1, sizes: [(640, 480)], scene: scene)
        let service = try RecorderService(options: options)
        let run = Task.detached { try await service.run() }
        let deadline = Date().addingTimeInterval(60)
        while Date() < deadline {
            if let origin = scene.originWallNanos, Int64(Date().timeIntervalSince1970 * 1e9) - origin > 14_000_000_000 { break }
            try await Task.sleep(nanoseconds: 100_000_000)
        }
        await service.stop()
        try await run.value

        let origin = try #require(scene.originWallNanos)
        let index = try RecordingIndex(root: dir.path + "/data")
        let events = try index.motionEvents(camera: "yard")
        try #require(events.count == 1, "one event for the one unmasked object, none for the masked one or the light: \(events)")
        let event = events[0]
        let start = Double(event.startNanos - origin) / 1e9
        let end = Double((event.endNanos ?? 0) - origin) / 1e9
        #expect(abs(start - 3) <= 0.5, "started \(start) s into the script, not 3 s")
        #expect(abs(end - 6) <= 0.5, "ended \(end) s into the script, not 6 s")
        // The square is 20 % of the height on a side: 96x96 of 640x480 is 3 % of the picture, 4.3 %
        // of its unmasked 70 % (cells the square's edges cross count too).
        #expect(event.peakPercent > 3.5 && event.peakPercent < 6, "peak \(event.peakPercent) %")
        let picture = try #require(event.picture)
        let path = dir.path + "/data/" + picture
        #expect(picture.hasPrefix("yard/events/"))
        #expect(RecordingInspector.ffprobeProblem(path) == nil, "the event's picture decodes")

        let lines = try String(contentsOfFile: hookLog, encoding: .utf8).split(separator: "\n").map(String.init)
        #expect(lines.count == 2, "\(lines)")
        #expect(lines.first?.hasPrefix("start yard \(RecorderEvent.iso(event.startNanos))") == true, "\(lines)")
        #expect(lines.last == "end \(RecorderEvent.iso(event.startNanos)) \(RecorderEvent.iso(event.endNanos!)) "
            + String(format: "%.1f", event.peakPercent) + " \(path)", "\(lines)")
    }
}
