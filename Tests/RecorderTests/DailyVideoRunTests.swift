import Capture
import CaptureTesting
import Foundation
import Recorder
import Synchronization
import Testing

/// `vigil run` builds yesterday's timelapse video at `daily_video.at`, by itself.
@Suite(.timeLimit(.minutes(2))) struct DailyVideoRunTests {
    @Test func theServiceBuildsTheDaysVideoWhenItsTimeComes() async throws {
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
            [location]
            time_zone = "UTC"
            [cameras.porch]
            device = "v4l2:usb-Vigil_Emulated_Camera_SN0001-video-index0"
            size = "160x120"
            pixel_format = "yuyv422"
            fps = 15
            [[timelapse]]
            camera = "porch"
            interval_seconds = 1
            daily_video = { fps = 30, at = "01:00" }
            """.write(toFile: file, atomically: true, encoding: .utf8)
        // Today's stills are taken on the real clock; the service's clock says it is ten seconds
        // before 01:00 tomorrow, and later half a minute after: today's video is then due.
        let today = Date()
        var calendar = Calendar(identifier: .gregorian)
        calendar.timeZone = TimeZone(identifier: "UTC")!
        let tomorrow = calendar.date(byAdding: .day, value: 1, to: calendar.startOfDay(for: today))!
        let serviceNow = Mutex(tomorrow.addingTimeInterval(3600 - 10))
        var options = RecorderService.Options(configurationPath: file)
        options.deviceSource = hotplug.source()
        options.clock = { serviceNow.withLock { $0 } }
        let service = try RecorderService(options: options)
        let run = Task.detached { try await service.run() }

        let label = documentedDay(today)
        let stills = dir.path + "/data/porch/stills"
        let video = dir.path + "/data/porch/timelapse/porch-\(label).mp4"
        #expect(await waitUntil(seconds: 30) { RecordingInspector.files(under: stills, endingWith: ".jpg").count >= 3 })
        #expect(!FileManager.default.fileExists(atPath: video), "built before its time")
        serviceNow.withLock { $0 = tomorrow.addingTimeInterval(3600 + 30) }
        #expect(await waitUntil(seconds: 60) { FileManager.default.fileExists(atPath: video) }, "no video of \(label)")
        await service.stop()
        try await run.value

        // One video, of today, made of today's stills in order (more may have come after the build).
        #expect(RecordingInspector.files(under: dir.path + "/data/porch/timelapse", endingWith: ".mp4") == [video])
        #expect(RecordingInspector.ffprobeProblem(video) == nil)
        let frames = try RecordingInspector.decode(video).sequences
        let shots = try RecordingInspector.files(under: stills + "/" + label, endingWith: ".jpg").sorted()
            .map { try RecordingInspector.decode($0).sequences.first ?? nil }
        #expect(frames.count >= 3 && frames.count <= shots.count)
        #expect(frames.allSatisfy { $0 != nil })
        #expect(Array(shots.prefix(frames.count)) == frames, "the video is not the day's stills in order")
    }

    /// YYYY-MM-DD of `date` in UTC, as the video's name has it.
    private func documentedDay(_ date: Date) -> String {
        let f = DateFormatter()
        f.locale = Locale(identifier: "en_US_POSIX")
        f.timeZone = TimeZone(identifier: "UTC")
        f.dateFormat = "yyyy-MM-dd"
        return f.string(from: date)
    }
}
