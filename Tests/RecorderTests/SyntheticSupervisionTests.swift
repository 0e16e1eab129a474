import Capture
import CaptureTesting
import Foundation
import Media
import Plumbing
import Recorder
import Synchronization
import Testing

@Suite(.timeLimit(.minutes(2))) struct SyntheticSupervisionTests {
    /// A camera being opened (after a plug event) when shutdown begins: `run()` waits for the
    /// open to finish and closes it, so no session outlives the supervisor and no `.partial` stays.
    @Test(.timeLimit(.minutes(1))) func aCameraOpeningDuringShutdownIsClosedBeforeRunReturns() async throws {
        /// Device discovery that can be held, as a slow USB enumeration would be.
        final class HeldSource: DeviceSource {
            let inner = SyntheticDeviceSource(count: 1)
            let hold = Atomic<Bool>(false)
            let waiting = Atomic<Int>(0)
            let calls = Atomic<Int>(0)
            func devices() -> [CaptureDevice] {
                defer { calls.add(1, ordering: .relaxed) }
                if hold.load(ordering: .acquiring) {
                    waiting.add(1, ordering: .relaxed)
                    while hold.load(ordering: .acquiring) { usleep(1000) }
                }
                return inner.devices()
            }
            func changes() -> AsyncStream<DeviceChange> { inner.changes() }
        }
        let storage = try TemporaryDirectory("vigil-rec")
        defer { storage.remove() }
        let source = HeldSource()
        source.inner.cameras[0].faults.unplug()
        let movie = try SegmentedMovieOutput(.init(storageRoot: storage.path, segmentSeconds: 60))
        let supervisor = Supervisor(
            plans: [CameraPlan(cameraID: "synthetic-0", format: .size(width: 160, height: 120, pixelFormat: .yuyv422),
                               frameRate: 15, outputs: [(movie, .init())])],
            source: source)
        let returned = Atomic<Bool>(false)
        let run = Task.detached {
            await supervisor.run()
            returned.store(true, ordering: .releasing)
        }
        // The first look finds no camera; the next is due in 5 s, or at a plug event.
        #expect(await waitUntil(seconds: 10) { source.calls.load(ordering: .relaxed) >= 1 })
        source.hold.store(true, ordering: .releasing)
        source.inner.cameras[0].faults.replug()
        #expect(await waitUntil(seconds: 10) { source.waiting.load(ordering: .relaxed) >= 1 }, "the plug event did not open the camera")
        run.cancel()
        // While the camera is being opened, run() must not return...
        let returnedEarly = await waitUntil(seconds: 1) { returned.load(ordering: .acquiring) }
        source.hold.store(false, ordering: .releasing)
        await run.value
        #expect(!returnedEarly, "run() returned while a camera was being opened")
        // ...and once it has, nothing records and every file is finalized.
        #expect(await supervisor.status().allSatisfy { !$0.isRecording })
        #expect(RecordingInspector.files(under: storage.path, endingWith: ".partial").isEmpty)
    }

    /// At shutdown every camera is told to stop at once: while the first camera is still
    /// draining its output, the others have already been stopped. (One after another, the first
    /// camera's drain would hold up all the others, and their times would add up.)
    @Test(.timeLimit(.minutes(1))) func shutdownStopsEveryCameraAtOnce() async throws {
        let source = SyntheticDeviceSource(count: 3)
        let stopping = Atomic<Bool>(false)
        let gate = Atomic<Bool>(false)
        let blocked = Atomic<Int>(0)
        let plans = (0..<3).map { i in
            // After `stopping`, the first frame blocks this camera's output until the gate opens.
            let output = FrameOutput(name: "slow", queueCapacity: 4) { _ in
                guard stopping.load(ordering: .acquiring), !gate.load(ordering: .acquiring) else { return }
                blocked.add(1, ordering: .relaxed)
                while !gate.load(ordering: .acquiring) { usleep(1000) }
            }
            return CameraPlan(cameraID: "synthetic-\(i)", format: .size(width: 160, height: 120, pixelFormat: .yuyv422),
                              frameRate: 15, outputs: [(output, .init())])
        }
        let supervisor = Supervisor(plans: plans, source: source)
        let run = Task.detached { await supervisor.run() }
        #expect(await waitUntil(seconds: 20) { await supervisor.status().allSatisfy { $0.isRecording && $0.frames > 3 } })
        stopping.store(true, ordering: .releasing)
        #expect(await waitUntil(seconds: 10) { blocked.load(ordering: .relaxed) >= 3 })
        run.cancel()
        let allStopping = await waitUntil(seconds: 10) { await supervisor.status().allSatisfy { !$0.isRecording } }
        gate.store(true, ordering: .releasing)
        await run.value
        #expect(allStopping, "cameras were stopped one after another")
        #expect(await supervisor.status().allSatisfy { !$0.isRecording })
    }

    /// An unplug costs exactly the shots whose instants passed while the camera was away: the
    /// stills on disk have one hole, its instants are the ones counted as skipped, and the log
    /// warns of each of them.
    @Test func timelapseSkipsTheShotsAnUnplugCostsAndSaysSo() async throws {
        let captured = CapturedLog.shared
        let storage = try TemporaryDirectory("vigil-rec")
        defer { storage.remove() }
        let source = SyntheticDeviceSource(count: 1)
        let timelapse = try TimelapseOutput(.init(storageRoot: storage.path, intervalSeconds: 1))
        let events = RecorderEvents()
        let log = RecorderLog(events)
        // A name of its own, so that the warnings of this camera are told apart from other tests'.
        let name = "skip-\(getpid())-\(SystemClocks.monotonicNanos())"
        let supervisor = Supervisor(
            plans: [CameraPlan(cameraID: name, matches: { $0.id == "synthetic-0" }, format: .size(width: 160, height: 120, pixelFormat: .yuyv422),
                               frameRate: 15, outputs: [(timelapse, .init())])],
            source: source, events: events)
        let run = Task.detached { await supervisor.run() }
        #expect(await waitUntil(seconds: 10) { log.count("still_saved") >= 2 })
        source.cameras[0].faults.unplug()
        #expect(await waitUntil(seconds: 10) { log.count("camera_lost") == 1 })
        // Away for at least two whole instants (the cause of the hole, not an assertion's wait).
        try await Task.sleep(nanoseconds: 2_600_000_000)
        source.cameras[0].faults.replug()
        let stillsBefore = log.count("still_saved")
        #expect(await waitUntil(seconds: 10) { log.count("still_saved") >= stillsBefore + 2 })
        run.cancel()
        await run.value
        #expect(await log.settle(), "the last session's events never arrived")

        let paths = log.all.compactMap { if case .stillSaved(_, let p, _) = $0 { return p } else { return nil } }
        #expect(Set(paths).count == paths.count, "a shot was taken twice")
        #expect(paths == paths.sorted(), "shots out of order")
        // The instants on disk, from the documented names CAMERA-YYYYMMDDTHHMMSSZ.jpg.
        let files = RecordingInspector.files(under: storage.path, endingWith: ".jpg")
        #expect(files == paths.sorted())
        let seconds = try files.map { try #require(Self.utcSeconds(ofStill: $0, camera: name), "\($0)") }
        let first = try #require(seconds.first), last = try #require(seconds.last)
        let missed = Set(first...last).subtracting(seconds).sorted()
        // One unplug, one hole of at least the two instants it certainly covered.
        #expect(missed.count >= 2, "stills at \(seconds)")
        if let a = missed.first, let b = missed.last { #expect(b - a + 1 == missed.count, "more than one hole: \(missed)") }
        #expect(timelapse.skippedShotCount == missed.count, "skipped \(timelapse.skippedShotCount), missing on disk \(missed)")
        let warned = captured.messages(.warning, containing: "camera \(name): timelapse skipped ").compactMap { message in
            Int(message.split(separator: "timelapse skipped ").last!.prefix { $0.isNumber })
        }
        #expect(warned.reduce(0, +) == missed.count, "warnings: \(warned)")
    }

    /// Seconds since 1970 of a still named `CAMERA-YYYYMMDDTHHMMSSZ.jpg`.
    static func utcSeconds(ofStill path: String, camera: String) -> Int? {
        let name = path.split(separator: "/").last.map(String.init) ?? ""
        guard name.hasPrefix(camera + "-"), name.hasSuffix("Z.jpg") else { return nil }
        let stamp = Array(name.dropFirst(camera.count + 1).dropLast(5))
        guard stamp.count == 15, stamp[8] == "T" else { return nil }
        func number(_ r: Range<Int>) -> Int32? { Int32(String(stamp[r])) }
        guard let y = number(0..<4), let mo = number(4..<6), let d = number(6..<8),
              let h = number(9..<11), let mi = number(11..<13), let s = number(13..<15) else { return nil }
        var t = tm()
        t.tm_year = y - 1900; t.tm_mon = mo - 1; t.tm_mday = d; t.tm_hour = h; t.tm_min = mi; t.tm_sec = s
        return Int(timegm(&t))
    }
}
