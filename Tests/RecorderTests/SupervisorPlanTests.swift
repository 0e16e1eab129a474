import CV4L2
import Capture
import CaptureTesting
import Foundation
import Recorder
import Synchronization
import Testing

/// Active in alternating windows of `windowNanos` (inactive first).
struct Alternating: OutputSchedule {
    let windowNanos: Int64
    func isActive(_ wall: Int64) -> Bool { (wall / windowNanos) % 2 == 1 }
    func state(atWallNanos wall: Int64) -> (isActive: Bool, untilWallNanos: Int64) {
        (isActive(wall), (wall / windowNanos + 1) * windowNanos)
    }
}

/// Sequence numbers of the frames an output saw, in order.
final class SequenceLog: Sendable {
    private let numbers = LockedList<UInt32?>()
    let output: FrameOutput
    init() {
        let numbers = self.numbers
        output = FrameOutput(name: "numbers", queueCapacity: 64, dropsLateFrames: false) { frame in
            numbers.append(PatternDecoder.sequence(inYUYV: frame.bytes, width: frame.width, height: frame.height))
        }
    }
    var all: [UInt32?] { numbers.all }
}

@Suite(.timeLimit(.minutes(3))) struct SupervisorPlanTests {
    private let cameraID = "v4l2:usb-Vigil_Emulated_Camera_SN0001-video-index0"
    private let format = FormatRequest.size(width: 160, height: 120, pixelFormat: .yuyv422)

    @Test func aScheduledCameraIsOpenOnlyAroundItsWindows() async throws {
        let devices = try TemporaryDirectory("vigil-dev")
        defer { devices.remove() }
        let camera = EmulatedCamera()
        let hotplug = EmulatedHotplug(kernel: EmulatedV4L2([camera]), deviceDirectory: devices.path)
        hotplug.plug(camera, as: "video0")
        let schedule = Alternating(windowNanos: 2_000_000_000)
        let frames = LockedList<Int64>()
        let output = FrameOutput(dropsLateFrames: false) { frames.append($0.wallNanos) }
        let events = RecorderEvents()
        let log = RecorderLog(events)
        let supervisor = Supervisor(
            plans: [CameraPlan(cameraID: "porch", matches: { $0.id == cameraID }, format: format, frameRate: 30,
                               outputs: [(output, .init())], schedule: schedule)],
            source: hotplug.source(), events: events, scheduleLeadSeconds: 0.3)
        let run = Task.detached { await supervisor.run() }
        #expect(await waitUntil(seconds: 30) { log.count("session_stopped") >= 2 })
        // The status tells a camera closed by its schedule from a recording one: in a gap it is
        // neither scheduled nor recording, in a window it is both.
        #expect(await waitUntil(seconds: 10) {
            let s = await supervisor.status().first
            return s?.isScheduled == false && s?.isRecording == false
        }, "never reported as closed for its schedule")
        #expect(await waitUntil(seconds: 10) {
            let s = await supervisor.status().first
            return s?.isScheduled == true && s?.isRecording == true
        }, "never reported as scheduled and recording")
        run.cancel()
        await run.value
        // Opened for each window (and closed after it), never kept open across the gaps.
        let walls = frames.all
        #expect(!walls.isEmpty)
        let outside = walls.filter { !schedule.isActive($0) && !schedule.isActive($0 + 300_000_000) }
        #expect(outside.count <= 2 * 30 / 5, "\(outside.count) frames captured well outside the windows")
        #expect(camera.streamStarts >= 2 && camera.streamStarts == log.count("session_started"))
        // Recordings and events carry the plan's name, not the device id.
        #expect(log.all.allSatisfy { $0.camera == nil || $0.camera == "porch" })
        #expect(hotplug.kernel.openFileCount == 0)
    }

    @Test func reconfiguringKeepsAnUnchangedOutputRecordingWithoutAGap() async throws {
        let devices = try TemporaryDirectory("vigil-dev")
        let storage = try TemporaryDirectory("vigil-rec")
        defer { devices.remove(); storage.remove() }
        let camera = EmulatedCamera()
        let hotplug = EmulatedHotplug(kernel: EmulatedV4L2([camera]), deviceDirectory: devices.path)
        hotplug.plug(camera, as: "video0")
        let kept = SequenceLog()
        let movie = try SegmentedMovieOutput(.init(storageRoot: storage.path, segmentSeconds: 3600, dropsLateFrames: false))
        let plan = CameraPlan(cameraID: cameraID, format: format, frameRate: 30, outputs: [(movie, .init()), (kept.output, .init())])
        let events = RecorderEvents()
        let log = RecorderLog(events)
        let supervisor = Supervisor(plans: [plan], source: hotplug.source(), events: events)
        let run = Task.detached { await supervisor.run() }
        #expect(await waitUntil(seconds: 30) { kept.all.count >= 15 })

        // New controls and a new output: one commit on the running session, no reopen.
        let timelapse = try TimelapseOutput(.init(storageRoot: storage.path, intervalSeconds: 1))
        var changed = plan
        changed.controls = ["brightness": 20]
        changed.outputs.append((timelapse, .init()))
        try await supervisor.reconfigure(changed)
        #expect(hotplug.kernel.controlValue(CV4L2_CID_BRIGHTNESS, of: camera) == 20)
        let count = kept.all.count
        #expect(await waitUntil(seconds: 30) { kept.all.count >= count + 45 && log.count("still_saved") >= 1 })

        // A setting the camera cannot honour is refused; the running configuration stays.
        var impossible = changed
        impossible.format = .size(width: 1000, height: 1000, pixelFormat: nil)
        await #expect(throws: (any Error).self) { try await supervisor.reconfigure(impossible) }
        // Removing an output finalizes its work; the others carry on.
        var smaller = changed
        smaller.outputs.removeLast()
        try await supervisor.reconfigure(smaller)
        let stills = log.count("still_saved")
        let after = kept.all.count
        #expect(await waitUntil(seconds: 30) { kept.all.count >= after + 45 })
        #expect(log.count("still_saved") <= stills + 1)
        run.cancel()
        await run.value

        #expect(camera.streamStarts == 1, "the camera was reopened")
        let numbers = kept.all.compactMap { $0 }
        #expect(numbers.count == kept.all.count)
        #expect(zip(numbers, numbers.dropFirst()).allSatisfy { $1 == $0 + 1 }, "a gap in the kept output")
        let files = RecordingInspector.files(under: storage.path, endingWith: ".mp4")
        // One file, or two where the run crossed an hour of the wall clock (segments are cut there).
        #expect(files.count == 1 || files.count == 2, "\(files)")
        let recorded = try files.flatMap { try RecordingInspector.decode($0).sequences }
        #expect(recorded.compactMap { $0 } == numbers, "the movie lost or repeated a frame across the reconfigurations")
    }
}

final class LockedList<Element: Sendable>: Sendable {
    private let values = Mutex<[Element]>([])
    func append(_ v: Element) { values.withLock { $0.append(v) } }
    var all: [Element] { values.withLock { $0 } }
}
