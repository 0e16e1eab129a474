import Capture
import CaptureTesting
import Foundation
import Recorder
import Testing

@Suite(.timeLimit(.minutes(3))) struct RecorderServiceTests {
    @Test func twoJobsOnOneCameraOpenItOnceAndBothRecord() async throws {
        let devices = try TemporaryDirectory("vigil-dev")
        let dir = try TemporaryDirectory("vigil-run")
        defer { devices.remove(); dir.remove() }
        let camera = EmulatedCamera()
        let hotplug = EmulatedHotplug(kernel: EmulatedV4L2([camera]), deviceDirectory: devices.path)
        hotplug.plug(camera, as: "video0")
        let file = dir.path + "/vigil.toml"
        try """
            [storage]
            root = "\(dir.path)/data"
            [cameras.porch]
            device = "v4l2:usb-Vigil_Emulated_Camera_SN0001-video-index0"
            size = "160x120"
            pixel_format = "mjpeg"
            fps = 15
            [[record]]
            camera = "porch"
            segment_seconds = 1
            [[timelapse]]
            camera = "porch"
            interval_seconds = 1
            """.write(toFile: file, atomically: true, encoding: .utf8)
        var options = RecorderService.Options(configurationPath: file)
        options.deviceSource = hotplug.source()
        let service = try RecorderService(options: options)
        let run = Task.detached { try await service.run() }
        let data = dir.path + "/data/porch"
        _ = await waitUntil(seconds: 30) {
            RecordingInspector.files(under: data + "/video", endingWith: ".mp4").count >= 2
                && RecordingInspector.files(under: data + "/stills", endingWith: ".jpg").count >= 2
        }
        await service.stop()
        try await run.value

        // One session fed both jobs: the camera streamed once, and nothing else held it.
        #expect(camera.streamStarts == 1)
        let segments = RecordingInspector.files(under: data + "/video", endingWith: ".mp4")
        let stills = RecordingInspector.files(under: data + "/stills", endingWith: ".jpg")
        #expect(segments.count >= 2 && stills.count >= 2)
        for path in segments + stills { #expect(RecordingInspector.ffprobeProblem(path) == nil, "\(path)") }
        #expect(hotplug.kernel.openFileCount == 0)
    }
}

@Suite(.timeLimit(.minutes(3))) struct BuiltInDefaultTests {
    @Test func withoutAConfigurationACameraPluggedInLaterIsRecordedToo() async throws {
        let devices = try TemporaryDirectory("vigil-dev")
        let dir = try TemporaryDirectory("vigil-default")
        defer { devices.remove(); dir.remove() }
        let camera = EmulatedCamera()
        let hotplug = EmulatedHotplug(kernel: EmulatedV4L2([camera]), deviceDirectory: devices.path)
        hotplug.kernel.unplug(camera)
        var options = RecorderService.Options(dataDirectory: dir.path)
        options.deviceSource = hotplug.source()
        let service = try RecorderService(options: options)
        let run = Task.detached { try await service.run() }
        // No camera at start: the synthetic one records, so a first run shows something.
        let synthetic = dir.path + "/synthetic-0/video"
        let usb = dir.path + "/v4l2-usb-Vigil_Emulated_Camera_SN0001-video-index0/video"
        #expect(await waitUntil(seconds: 30) { !RecordingInspector.files(under: synthetic, endingWith: ".partial").isEmpty })
        hotplug.plug(camera, as: "video0")
        #expect(await waitUntil(seconds: 30) { !RecordingInspector.files(under: usb, endingWith: ".partial").isEmpty })
        try await Task.sleep(nanoseconds: 1_000_000_000)
        await service.stop()
        try await run.value
        let files = RecordingInspector.files(under: usb, endingWith: ".mp4")
        #expect(files.count >= 1, "the camera plugged in later was not recorded")
        #expect(!RecordingInspector.files(under: synthetic, endingWith: ".mp4").isEmpty)
        for f in files { #expect(RecordingInspector.ffprobeProblem(f) == nil) }
        #expect(camera.streamStarts == 1)
    }
}
