import Capture
import CaptureTesting
import Foundation
import Recorder
import Synchronization
import Testing

/// Motion detection as a user switches it on: a `[[motion]]` table, a camera filming a scripted
/// scene, events in the index with their picture, and the hooks.
@Suite(.timeLimit(.minutes(3))) struct MotionRecorderTests {
    /// Runs the recorder on `file` with one camera filming `scene` until the script has run
    /// `seconds` (the recorder then stops, finalizing its files and running its hooks).
    private func record(_ file: String, filming scene: SyntheticScene, size: (Int, Int), forSeconds seconds: Double) async throws {
        var options = RecorderService.Options(configurationPath: file)
        options.deviceSource = SyntheticDeviceSource(count: 1, sizes: [size], scene: scene)
        let service = try RecorderService(options: options)
        let run = Task.detached { try await service.run() }
        // The scene's own clock, not the test's: it starts with the camera's first frame.
        let played = await waitUntil(seconds: seconds + 60) {
            scene.originWallNanos.map { Date().timeIntervalSince1970 * 1e9 - Double($0) > seconds * 1e9 } ?? false
        }
        #expect(played, "the scene did not play \(seconds) s")
        await service.stop()
        try await run.value
    }

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
        try await record(file, filming: scene, size: (640, 480), forSeconds: 14)

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

    /// A square that crosses the picture again and again: motion that never stops. While the
    /// event goes on, its row in the running recorder's index has a real size and a picture (the
    /// review list and the API read that row), and at `max_seconds` it is cut, the next event
    /// beginning where it ended.
    @Test func motionThatNeverStopsIsListedWithItsSizeAndPictureAndCutAtItsMaximum() async throws {
        let dir = try TemporaryDirectory("vigil-motion-endless")
        defer { dir.remove() }
        let scene = SyntheticScene(objects: [.init(enters: 0, leaves: 2, top: 0.6)], repeatSeconds: 2)
        let file = dir.path + "/vigil.toml"
        try """
            [storage]
            root = "\(dir.path)/data"
            [http]
            listen = ""
            [cameras.yard]
            device = "synthetic-scene-0"
            size = "320x240"
            fps = 10
            [[motion]]
            camera = "yard"
            max_seconds = 4
            """.write(toFile: file, atomically: true, encoding: .utf8)
        var options = RecorderService.Options(configurationPath: file)
        options.deviceSource = SyntheticDeviceSource(count: 1, sizes: [(320, 240)], scene: scene)
        let opened = LockedArray<RecorderService.Opened>()
        options.extraServices = { opened.append($0); return RecorderService.ExtraServices() }
        let service = try RecorderService(options: options)
        let run = Task.detached { try await service.run() }
        func events() -> [RecordingIndex.MotionEvent] { (try? opened.all.first?.index.motionEvents(camera: "yard")) ?? [] }
        let running = LockedArray<RecordingIndex.MotionEvent>()
        let listed = await waitUntil(seconds: 60) {
            guard let event = events().first, event.endNanos == nil, event.peakPercent > 0, event.picture != nil else { return false }
            running.append(event)
            return true
        }
        #expect(listed, "the event under way was never listed with a size and a picture: \(events())")
        let cut = await waitUntil(seconds: 60) {
            let all = events()
            return all.count >= 2 && all[0].endNanos != nil && all[1].startNanos == all[0].endNanos
        }
        #expect(cut, "the endless event was not cut: \(events())")
        await service.stop()
        try await run.value

        let underWay = try #require(running.all.first)
        let picture = try #require(underWay.picture)
        #expect(picture.hasPrefix("yard/events/"))
        #expect(RecordingInspector.ffprobeProblem(dir.path + "/data/" + picture) == nil, "the running event's picture decodes")
        let all = try RecordingIndex(root: dir.path + "/data").motionEvents(camera: "yard")
        try #require(all.count >= 2)
        #expect(all[0].startNanos == underWay.startNanos && all[0].picture == picture, "the picture stays at one path")
        #expect(Double(all[0].endNanos! - all[0].startNanos) / 1e9 >= 4, "cut at max_seconds, not before")
    }

    /// `mode = "motion"`: a square crosses from 3 s to 5 s and another from 7 s to 9 s (closer
    /// than pre + post: one recording), a third from 19 s to 21 s (a second one). Each moves for
    /// 2 s, so that a detector that drops late frames under load (it analyses 5 pictures a second
    /// at most) still sees it move for `min_seconds`: a square of 1 s was once missed on a loaded
    /// machine. Frames carry their sequence number in the masked top half, so the files are
    /// checked frame by frame.
    /// Segments are 5 s: a recording is cut on that grid into files that follow each other.
    @Test(arguments: [("yuyv422", "h264"), ("mjpeg", "copy")])
    func motionOnlyFilesHoldEveryObjectFrameWithPreAndPostRoll(pixelFormat: String, codec: String) async throws {
        let dir = try TemporaryDirectory("vigil-motion-only")
        defer { dir.remove() }
        let fps = 10.0, pre = 2.0, post = 2.0
        let scripted: [(enters: Double, leaves: Double)] = [(3, 5), (7, 9), (19, 21)]
        let scene = SyntheticScene(objects: scripted.map { .init(enters: $0.enters, leaves: $0.leaves, top: 0.6) }, showsSequence: true)
        let file = dir.path + "/vigil.toml"
        try """
            [storage]
            root = "\(dir.path)/data"
            [cameras.yard]
            device = "synthetic-scene-0"
            size = "320x240"
            pixel_format = "\(pixelFormat)"
            fps = \(Int(fps))
            [[motion]]
            camera = "yard"
            gap_seconds = 1
            mask = ["0,0 100%,0 100%,50% 0,50%"]
            [[record]]
            camera = "yard"
            codec = "\(codec)"
            segment_seconds = 5
            mode = "motion"
            pre_seconds = \(pre)
            post_seconds = \(post)
            """.write(toFile: file, atomically: true, encoding: .utf8)
        try await record(file, filming: scene, size: (320, 240), forSeconds: 26)

        let files = RecordingInspector.files(under: dir.path + "/data/yard/video", endingWith: codec == "copy" ? ".mkv" : ".mp4").sorted()
        // Files that continue one another (the next frame follows) are one recording.
        var held: [[UInt32]] = []
        for path in files {
            #expect(RecordingInspector.ffprobeProblem(path) == nil, "\(path)")
            let decoded = try RecordingInspector.decode(path)
            #expect(decoded.startsWithKeyframe)
            let sequences = decoded.sequences.compactMap { $0 }
            try #require(!sequences.isEmpty && sequences.count == decoded.sequences.count, "every frame shows its number")
            #expect(sequences == Array(sequences.first!...sequences.last!), "\(path): no frame lost or repeated")
            if let last = held.last?.last, sequences.first! == last + 1 { held[held.count - 1] += sequences } else { held.append(sequences) }
        }
        #expect(files.count > held.count, "a recording is cut on the 5 s grid: \(files)")
        try #require(held.count == 2, "one recording for the two objects close together, one for the third: \(held.map { "\($0.first!)–\($0.last!)" })")
        // Detection may be 0.5 s late or early; a file begins at the keyframe before the pre-roll
        // and ends with the group of pictures the post-roll reaches (H.264: a keyframe every 2 s).
        func frame(_ seconds: Double) -> UInt32 { UInt32(max(0, (seconds * fps).rounded())) }
        let groups = [(first: scripted[0], last: scripted[1]), (first: scripted[2], last: scripted[2])]
        for (sequences, group) in zip(held, groups) {
            let mustFrom = frame(group.first.enters + 0.5 - pre), mustTo = frame(group.last.leaves - 0.5 + post)
            #expect(sequences.first! <= mustFrom && sequences.last! >= mustTo,
                    "frames \(sequences.first!)–\(sequences.last!) must hold \(mustFrom)–\(mustTo)")
            let slack = codec == "copy" ? 0.6 : 2.6
            #expect(sequences.first! >= frame(group.first.enters - pre - slack) && sequences.last! <= frame(group.last.leaves + post + slack),
                    "frames \(sequences.first!)–\(sequences.last!) hold much more than the motion and its roll")
        }
    }
}

/// A network camera's `detect_url`: detection watches the small second stream, recording the
/// main one, and the second stream is no camera of its own in the status.
@Suite(.serialized, .timeLimit(.minutes(3))) struct DetectionStreamTests {
    /// A camera `porch` whose main stream is 320x240 and whose second stream (a server of its
    /// own) is 160x120, both gst's bouncing ball, recorded by `vigil run`'s service.
    fileprivate final class TwoStreams: Sendable {
        let main: LoopbackCameraServer
        let small: LoopbackCameraServer
        let dir: TemporaryDirectory
        let opened = LockedArray<RecorderService.Opened>()
        var data: String { dir.path + "/data" }
        var file: String { dir.path + "/vigil.toml" }

        init() throws {
            main = try LoopbackCameraServer.rtsp(size: "320x240")
            small = try LoopbackCameraServer.rtsp(size: "160x120")
            dir = try TemporaryDirectory("vigil-detect-url")
        }

        func remove() {
            main.stop()
            small.stop()
            dir.remove()
        }

        /// Writes the configuration, with or without the second stream.
        func write(detect: Bool) throws {
            try """
                [storage]
                root = "\(data)"
                [http]
                listen = ""
                [cameras.porch]
                url = "\(main.url())"
                \(detect ? "detect_url = \"\(small.url())\"" : "")
                [[record]]
                camera = "porch"
                segment_seconds = 1
                [[motion]]
                camera = "porch"
                gap_seconds = 1
                """.write(toFile: file, atomically: true, encoding: .utf8)
        }

        /// Runs the recorder until `done` holds (a minute at most), then stops it.
        func record(until done: @escaping (RecorderService.Opened) async -> Bool) async throws {
            var options = RecorderService.Options(configurationPath: file)
            options.extraServices = { [opened] in opened.append($0); return RecorderService.ExtraServices() }
            let service = try RecorderService(options: options)
            let run = Task.detached { try await service.run() }
            let finished = await waitUntil(seconds: 60) {
                guard let recorder = opened.all.first else { return false }
                return await done(recorder)
            }
            #expect(finished, "the recorder never got where the test waits for")
            await service.stop()
            try await run.value
        }

        /// The motion events' starts, as the running recorder's index has them.
        func starts(_ recorder: RecorderService.Opened) -> [Int64] {
            ((try? recorder.index.motionEvents(camera: "porch")) ?? []).map(\.startNanos)
        }
    }

    @Test func detectionWatchesTheSecondStreamAndItsEventsAreTheCamerasOwn() async throws {
        let streams = try TwoStreams()
        defer { streams.remove() }
        try streams.write(detect: true)
        let names = LockedArray<[String]>()
        try await streams.record { recorder in
            names.append(await recorder.supervisor.status().map(\.cameraID))
            return !streams.starts(recorder).isEmpty
                && RecordingInspector.files(under: streams.data + "/porch/video", endingWith: ".mp4").count >= 2
        }

        #expect(names.all.last == ["porch"], "the detection stream is not listed as a camera: \(names.all)")
        let events = try RecordingIndex(root: streams.data).motionEvents()
        try #require(events.count >= 1)
        #expect(events.allSatisfy { $0.camera == "porch" })
        let picture = try #require(events.first?.picture)
        #expect(picture.hasPrefix("porch/events/"))
        #expect(SegmentProbe.dimensions(streams.data + "/" + picture) == "160x120", "the picture is of the detection stream")
        let segments = RecordingInspector.files(under: streams.data + "/porch/video", endingWith: ".mp4")
        #expect(!segments.isEmpty && segments.allSatisfy { SegmentProbe.dimensions($0) == "320x240" }, "the main stream is recorded")
    }

    /// Saving the file without `detect_url` moves detection onto the main stream at once (the
    /// motion output leaves the detection stream's session before it joins the camera's).
    @Test func aReloadThatDropsTheDetectionStreamDetectsOnTheMainStream() async throws {
        let streams = try TwoStreams()
        defer { streams.remove() }
        try streams.write(detect: true)
        let before = LockedArray<Int>()
        try await streams.record { recorder in
            let count = streams.starts(recorder).count
            guard let first = before.all.first else {
                // Detection on the second stream first; then the file loses detect_url.
                if count >= 1 {
                    before.append(count)
                    try? streams.write(detect: false)
                }
                return false
            }
            // The event under way ends when its stream goes; the next one comes from the main stream.
            return count >= first + 1
        }
        let first = try #require(before.all.first, "detection on the second stream")
        let events = try RecordingIndex(root: streams.data).motionEvents(camera: "porch")
        #expect(events.count >= first + 1, "detection goes on after the reload: \(events)")
        let last = try #require(events.last?.picture)
        #expect(SegmentProbe.dimensions(streams.data + "/" + last) == "320x240", "the main stream's picture")
    }
}

/// Values handed over from another task.
private final class LockedArray<Element: Sendable>: Sendable {
    private let storage = Mutex<[Element]>([])
    func append(_ e: Element) { storage.withLock { $0.append(e) } }
    var all: [Element] { storage.withLock { $0 } }
}
