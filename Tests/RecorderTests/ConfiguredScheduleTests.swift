import Capture
import CaptureTesting
import Foundation
@testable import Recorder
import Testing

/// A `schedule = [...]` written in the configuration reaches the outputs and the camera's plan
/// (what the supervisor consults to open and close the camera), across daylight-saving nights.
@Suite(.timeLimit(.minutes(2))) struct ConfiguredScheduleTests {
    private func jobs(_ record: String, _ timelapse: String, zone: String = "Europe/Berlin") throws -> (CameraJobs, TemporaryDirectory) {
        let dir = try TemporaryDirectory()
        let c = try ConfigurationLoader.parse(text: """
            [location]
            time_zone = "\(zone)"
            [cameras.porch]
            device = "/dev/video0"
            [[record]]
            camera = "porch"
            schedule = [\(record)]
            [[timelapse]]
            camera = "porch"
            schedule = [\(timelapse)]
            """, path: "vigil.toml")
        let camera = try #require(c.cameras.first)
        let jobs = try CameraJobs(camera, environment: .init(storageRoot: dir.path, timeZone: c.timeZone, location: c.location))
        return (jobs, dir)
    }

    private func active(_ schedule: (any OutputSchedule)?, _ utcSeconds: Int64) -> Bool? {
        schedule?.state(atWallNanos: utcSeconds * 1_000_000_000).isActive
    }

    private func until(_ schedule: (any OutputSchedule)?, _ utcSeconds: Int64) -> Int64? {
        schedule.map { $0.state(atWallNanos: utcSeconds * 1_000_000_000).untilWallNanos / 1_000_000_000 }
    }

    /// Spring, Europe/Berlin 2026-03-29: 02:00 CET jumps to 03:00 CEST. The documented example:
    /// `02:30-03:30` runs 03:00-03:30 CEST that day (01:00-01:30 UTC).
    @Test func aWindowInTheSpringGapRunsFromTheJump() throws {
        let (jobs, dir) = try jobs(#""02:30-03:30""#, #""22:00-06:00""#)
        defer { dir.remove() }
        let record = try #require(jobs.movie?.settings.schedule, "the record job's schedule did not reach its output")
        #expect(active(record, 1_774_745_999) == false)          // 00:59:59 UTC, 01:59:59 CET
        #expect(until(record, 1_774_745_999) == 1_774_746_000)   // opens at the jump
        #expect(active(record, 1_774_746_000) == true)           // 01:00 UTC, 03:00 CEST
        #expect(until(record, 1_774_746_000) == 1_774_747_800)   // until 03:30 CEST
        #expect(active(record, 1_774_747_800) == false)
        // The overnight window is seven real hours that night: 22:00 CET to 06:00 CEST.
        let timelapse = try #require(jobs.timelapse?.settings.schedule, "the timelapse job's schedule did not reach its output")
        #expect(active(timelapse, 1_774_731_600 - 1) == false)   // 20:59:59 UTC, 21:59:59 CET
        #expect(active(timelapse, 1_774_731_600) == true)        // 21:00 UTC, 22:00 CET
        #expect(until(timelapse, 1_774_731_600) == 1_774_756_800)  // 04:00 UTC, 06:00 CEST
        #expect(active(timelapse, 1_774_756_800) == false)
        // The camera is open while either job is: the plan the supervisor runs has both.
        let plan = try #require(jobs.plan.schedule)
        #expect(active(plan, 1_774_731_600) == true && active(plan, 1_774_746_000) == true)
        #expect(active(plan, 1_774_756_800) == false && active(plan, 1_774_731_600 - 1) == false)
    }

    /// Autumn, Europe/Berlin 2026-10-25: 03:00 CEST falls back to 02:00 CET, so 02:00-03:00 happens
    /// twice. A window starts at the first occurrence and happens once.
    @Test func aWindowInTheAutumnRepeatHappensOnce() throws {
        let (jobs, dir) = try jobs(#""02:30-03:30""#, #""22:00-06:00""#)
        defer { dir.remove() }
        let record = try #require(jobs.movie?.settings.schedule)
        #expect(active(record, 1_792_888_200 - 1) == false)      // 00:29:59 UTC
        #expect(active(record, 1_792_888_200) == true)           // 00:30 UTC, 02:30 CEST (the first)
        #expect(until(record, 1_792_888_200) == 1_792_895_400)   // 02:30 UTC, 03:30 CET
        #expect(active(record, 1_792_891_800) == true)           // 01:30 UTC, 02:30 CET (the second): still the same window
        #expect(active(record, 1_792_895_400) == false)
        // Overnight: 22:00 CEST to 06:00 CET is nine real hours.
        let timelapse = try #require(jobs.timelapse?.settings.schedule)
        #expect(active(timelapse, 1_792_872_000) == true)        // 20:00 UTC, 22:00 CEST
        #expect(until(timelapse, 1_792_872_000) == 1_792_904_400)  // 05:00 UTC, 06:00 CET
        #expect(active(timelapse, 1_792_904_400) == false)
        let plan = try #require(jobs.plan.schedule)
        #expect(active(plan, 1_792_872_000) == true && active(plan, 1_792_895_400) == true)
        #expect(active(plan, 1_792_904_400) == false && active(plan, 1_792_872_000 - 1) == false)
    }

    /// Through `RecorderService`, as `vigil run` does it: a record job scheduled now records, and a
    /// timelapse job of the same camera scheduled later takes no still while the camera is open.
    @Test func aConfiguredScheduleDecidesWhatRecordsNow() async throws {
        let devices = try TemporaryDirectory("vigil-dev")
        let dir = try TemporaryDirectory("vigil-run")
        defer { devices.remove(); dir.remove() }
        let camera = EmulatedCamera()
        let hotplug = EmulatedHotplug(kernel: EmulatedV4L2([camera]), deviceDirectory: devices.path)
        hotplug.plug(camera, as: "video0")
        // Windows in UTC around now: recording from an hour ago to an hour ahead, stills from
        // two to three hours ahead.
        func clock(_ offsetHours: Int) -> String {
            var t = time_t(Date().timeIntervalSince1970) + time_t(offsetHours * 3600)
            var parts = tm()
            gmtime_r(&t, &parts)
            return String(format: "%02d:%02d", parts.tm_hour, parts.tm_min)
        }
        let file = dir.path + "/vigil.toml"
        try """
            [storage]
            root = "\(dir.path)/data"
            [location]
            time_zone = "UTC"
            [cameras.porch]
            device = "v4l2:usb-Vigil_Emulated_Camera_SN0001-video-index0"
            size = "160x120"
            pixel_format = "mjpeg"
            fps = 15
            [[record]]
            camera = "porch"
            segment_seconds = 1
            schedule = ["\(clock(-1))-\(clock(1))"]
            [[timelapse]]
            camera = "porch"
            interval_seconds = 1
            schedule = ["\(clock(2))-\(clock(3))"]
            """.write(toFile: file, atomically: true, encoding: .utf8)
        var options = RecorderService.Options(configurationPath: file)
        options.deviceSource = hotplug.source()
        let service = try RecorderService(options: options)
        let run = Task.detached { try await service.run() }
        let data = dir.path + "/data/porch"
        // Two finished one-second segments: at least one whole second, a timelapse instant, passed.
        #expect(await waitUntil(seconds: 30) { RecordingInspector.files(under: data + "/video", endingWith: ".mp4").count >= 2 })
        await service.stop()
        try await run.value
        let segments = RecordingInspector.files(under: data + "/video", endingWith: ".mp4")
        for path in segments { #expect(RecordingInspector.ffprobeProblem(path) == nil, "\(path)") }
        #expect(RecordingInspector.files(under: data + "/stills", endingWith: ".jpg").isEmpty, "a still outside its schedule")
        #expect(hotplug.kernel.openFileCount == 0)
    }
}
