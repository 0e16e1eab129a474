import CV4L2
import Capture
import CaptureTesting
import Foundation
import Glibc
import Media
import Testing

@Suite struct V4L2DiscoveryTests {
    @Test func discoveryListsCamerasWithStableIdentityFormatsAndControls() throws {
        let withSerial = EmulatedCamera()
        let metadata = EmulatedCamera(node: "/dev/video1", stableName: nil)
        metadata.isMetadataNode = true
        let noSerial = EmulatedCamera(node: "/dev/video2", card: "Cheap Camera", bus: "usb-0000:00:14.0-2", stableName: nil)
        let kernel = EmulatedV4L2([withSerial, metadata, noSerial])
        let devices = V4L2Discovery(system: kernel).devices()
        #expect(devices.map(\.id) == ["v4l2:usb-Vigil_Emulated_Camera_SN0001-video-index0", "v4l2:usb-0000:00:14.0-2"])
        let camera = try #require(devices.first)
        #expect(camera.name == "Emulated USB Camera")
        #expect(camera.details == DeviceDetails(node: "/dev/video0", driver: "uvcvideo", card: "Emulated USB Camera", bus: "usb-0000:00:14.0-1"))
        #expect(camera.formats.contains(DeviceFormat(pixelFormat: .mjpeg, width: 1920, height: 1080, frameRates: 5...30)))
        #expect(camera.formats.contains(DeviceFormat(pixelFormat: .yuyv422, width: 640, height: 480, frameRates: 5...30)))
        #expect(!camera.formats.contains { $0.pixelFormat == .yuyv422 && $0.width == 1920 })
        // MJPEG is preferred over YUYV at the same size (USB bandwidth).
        #expect(Preset.vga.resolve(in: camera.formats)?.pixelFormat == .mjpeg)
        #expect(Preset.high.resolve(in: camera.formats) == DeviceFormat(pixelFormat: .mjpeg, width: 1920, height: 1080, frameRates: 5...30))

        let keys = camera.controls.map(\.key)
        for key in ["brightness", "contrast", "white_balance_auto", "white_balance_temperature", "power_line_frequency",
                    "exposure_auto", "exposure_absolute", "focus_auto", "focus_absolute"] {
            #expect(keys.contains(key), "missing control \(key)")
        }
        let power = try #require(camera.control("power_line_frequency"))
        #expect(power.kind == .menu && power.menu == [0: "Disabled", 1: "50 Hz", 2: "60 Hz"])
        #expect(camera.control("exposure_auto")?.menu == [1: "Manual Mode", 3: "Aperture Priority Mode"])
        #expect(camera.control("brightness")?.minimum == -64 && camera.control("brightness")?.maximum == 64)
    }

    @Test func aRenumberedCameraKeepsItsIdentity() {
        let camera = EmulatedCamera()
        let kernel = EmulatedV4L2([camera])
        let before = V4L2Discovery(system: kernel).devices().map(\.id)
        kernel.unplug(camera)
        #expect(V4L2Discovery(system: kernel).devices().isEmpty)
        kernel.replug(camera, node: "/dev/video4")
        let after = V4L2Discovery(system: kernel).devices()
        #expect(after.map(\.id) == before)
        #expect(after.first?.details.node == "/dev/video4")
    }
}

@Suite(.timeLimit(.minutes(3))) struct V4L2CaptureTests {
    private func camera(_ kernel: EmulatedV4L2) throws -> CaptureDevice {
        try #require(V4L2Discovery(system: kernel).devices().first)
    }

    /// Frames show the driver's buffers themselves while enough stay queued for the driver
    /// (no copy), and are copied when a slow output holds too many. A held frame keeps its own
    /// picture: its buffer goes back to the driver only when the frame is released, never while
    /// an output still has it queued. Stopping with frames still queued unmaps nothing under
    /// them; the mappings go once they are released.
    @Test func framesAreTheDriversBuffersUntilReleasedAndCopiedWhenOutputsHoldTooMany() async throws {
        let kernel = EmulatedV4L2([EmulatedCamera()])
        let device = try camera(kernel)
        struct Seen: Sendable {
            let sequence: UInt64
            let painted: UInt32?
            let lent: Bool
            /// The camera paints its own count, which runs on across sessions; the driver's restarts at 0.
            var offset: Int64? { painted.map { Int64($0) - Int64(sequence) } }
        }
        func ownPictures(_ frames: [Seen]) -> Bool { !frames.isEmpty && frames.allSatisfy { $0.offset != nil && $0.offset == frames[0].offset } }
        let fast = LockedArray<Seen>(), slow = LockedArray<Seen>()
        func recorder(_ into: LockedArray<Seen>, delay: Double) -> FrameOutput {
            FrameOutput(name: delay > 0 ? "slow" : "fast", queueCapacity: 64, dropsLateFrames: false) { frame in
                // Read the picture last, after the delay: a buffer requeued under a held frame
                // would by then hold a later frame's picture.
                if delay > 0 { usleep(UInt32(delay * 1e6)) }
                into.append(Seen(
                    sequence: frame.sequence,
                    painted: PatternDecoder.sequence(inYUYV: frame.bytes, width: frame.width, height: frame.height),
                    lent: kernel.isInMappedBuffer(frame.bytes)))
            }
        }
        /// Records with `output` until `frames` holds `count` frames, then stops.
        func capture(into frames: LockedArray<Seen>, delay: Double, count: Int) async throws {
            let session = CaptureSession()
            try session.addInput(device)
            try session.setFormat(.size(width: 320, height: 240, pixelFormat: .yuyv422))
            try session.setFrameRate(30)
            try session.addOutput(recorder(frames, delay: delay))
            try session.startRunning()
            #expect(await waitUntil(seconds: 20) { frames.all.count >= count })
            await session.stop()
        }
        try await capture(into: fast, delay: 0, count: 30)
        let fastFrames = fast.all
        #expect(ownPictures(fastFrames), "\(fastFrames.map { ($0.sequence, $0.painted) })")
        #expect(fastFrames.filter(\.lent).count >= fastFrames.count - 2, "a fast output should get the driver's buffers: \(fastFrames.map(\.lent))")

        // A second session: an output ten times slower than the camera holds a queue of frames.
        try await capture(into: slow, delay: 0.1, count: 12)
        #expect(await waitUntil(seconds: 20) { kernel.mappingCount == 0 }, "mappings left after every frame was released: \(kernel.mappingCount)")
        let slowFrames = slow.all
        #expect(ownPictures(slowFrames), "\(slowFrames.map { ($0.sequence, $0.painted) })")
        #expect(slowFrames.contains { $0.lent } && slowFrames.contains { !$0.lent }, "\(slowFrames.map(\.lent))")
    }

    /// A UVC H.264 camera (`pixel_format = "h264"`): packets go into the segments as they are,
    /// each segment starts at a keyframe, every frame is kept across boundaries, and stills
    /// decode from the keyframe before their instant.
    @Test func h264CameraIsRecordedWithoutDecoding() async throws {
        let dir = try TemporaryDirectory()
        defer { dir.remove() }
        let kernel = EmulatedV4L2([EmulatedCamera(formats: [EmulatedCamera.Format(.h264, sizes: [(320, 240)], frameRates: [15])])])
        let device = try camera(kernel)
        #expect(device.formats == [DeviceFormat(pixelFormat: .h264, width: 320, height: 240, frameRates: 15...15)])
        let movie = try SegmentedMovieOutput(.init(storageRoot: dir.path, segmentSeconds: 1, encoding: .streamCopy))
        let timelapse = try TimelapseOutput(.init(storageRoot: dir.path, intervalSeconds: 1))
        let (session, log) = try startSession(
            device: device, format: .size(width: 320, height: 240, pixelFormat: .h264), fps: 15,
            outputs: [(movie, .init()), (timelapse, .init())])
        #expect(await waitUntil(seconds: 20) { log.segments.count >= 3 && log.stills.count >= 2 })
        await stopAndDrain(session, log)
        let files = RecordingInspector.files(under: dir.path, endingWith: ".mp4")
        #expect(files.count >= 4 && files == log.segments.map(\.path).sorted())
        let decoded = try files.map { try RecordingInspector.decode($0) }
        for d in decoded {
            #expect(d.startsWithKeyframe)
            #expect(d.codec == "h264" && d.width == 320 && d.height == 240)
            #expect(RecordingInspector.ffprobeProblem(d.path) == nil)
        }
        let seqs = expectContiguous(decoded)
        #expect(seqs.first == 0)
        #expect(movie.droppedFrameCount == 0 && seqs.count == movie.receivedFrameCount)
        for still in log.stills {
            let picture = try RecordingInspector.decode(still.path)
            #expect(picture.sequences.count == 1 && picture.sequences[0] != nil)
        }
        #expect(log.errors.isEmpty, "\(log.errors)")
    }

    @Test(arguments: [PixelFormat.mjpeg, .yuyv422])
    func captureIntoSegmentsAndStillsKeepsEveryFrame(format: PixelFormat) async throws {
        let dir = try TemporaryDirectory()
        defer { dir.remove() }
        let kernel = EmulatedV4L2([EmulatedCamera()])
        let movie = try SegmentedMovieOutput(.init(storageRoot: dir.path, segmentSeconds: 1))
        let timelapse = try TimelapseOutput(.init(storageRoot: dir.path, intervalSeconds: 1))
        let (session, log) = try startSession(
            device: camera(kernel), format: .size(width: 320, height: 240, pixelFormat: format), fps: 30,
            outputs: [(movie, .init()), (timelapse, .init())])
        #expect(await waitUntil(seconds: 20) { log.segments.count >= 3 && log.stills.count >= 2 })
        await stopAndDrain(session, log)
        let files = RecordingInspector.files(under: dir.path, endingWith: ".mp4")
        let decoded = try files.map { try RecordingInspector.decode($0) }
        for d in decoded {
            #expect(d.startsWithKeyframe)
            #expect(RecordingInspector.ffprobeProblem(d.path) == nil)
        }
        let seqs = expectContiguous(decoded)
        #expect(movie.droppedFrameCount == 0 && seqs.count == movie.receivedFrameCount)
        for still in log.stills {
            #expect(try RecordingInspector.decode(still.path).sequences.count == 1)
        }
        #expect(kernel.openFileCount == 0 && kernel.mappingCount == 0)
    }

    @Test func unplugInTheMiddleOfAFrameInterruptsAndFinalizesTheSegment() async throws {
        let dir = try TemporaryDirectory()
        defer { dir.remove() }
        let emulated = EmulatedCamera()
        emulated.unplugAfterFrames = 25
        let kernel = EmulatedV4L2([emulated])
        let movie = try SegmentedMovieOutput(.init(storageRoot: dir.path, segmentSeconds: 60))
        let (session, log) = try startSession(
            device: camera(kernel), format: .size(width: 320, height: 240, pixelFormat: .mjpeg), fps: 30,
            outputs: [(movie, .init())])
        #expect(await waitUntil(seconds: 20) { !session.isRunning && !log.segments.isEmpty })
        let interruption = log.all.compactMap { if case .interrupted(_, _, let reason) = $0 { return reason } else { return nil } }
        #expect(interruption.count == 1)
        // The device is gone (ENODEV): counted as unplugged, whoever notices first.
        #expect(log.all.compactMap { if case .interrupted(_, let c, _) = $0 { return c } else { return nil } } == [LossCause.unplugged])
        // The poll path and the ioctl path say it in the same words, whichever notices first.
        #expect(interruption.first?.contains("the camera was disconnected (") == true, "\(interruption)")
        #expect(log.errors.isEmpty)
        #expect(RecordingInspector.files(under: dir.path, endingWith: ".partial").isEmpty)
        let files = RecordingInspector.files(under: dir.path, endingWith: ".mp4")
        // One segment, or two when the 25 frames straddle a minute of the wall-clock grid.
        let minute: Int64 = 60_000_000_000
        let first = log.segments.map(\.firstFrameWallNanos).min() ?? 0, last = log.segments.map(\.lastFrameWallNanos).max() ?? 0
        #expect(files.count == Int(last / minute - first / minute) + 1)
        let seqs = expectContiguous(try files.map { try RecordingInspector.decode($0) })
        // The frame dequeued as the camera vanished was delivered: all 25 are in the file(s).
        #expect(seqs == Array(0..<25))
        #expect(kernel.openFileCount == 0 && kernel.mappingCount == 0)
    }

    @Test(arguments: [
        (EmulatedCamera.Corruption.truncatedJPEG, "truncated or corrupt MJPEG frame"),
        (.errorFlag, "the driver flagged the frame as damaged"),
        (.empty, "empty frame"),
    ])
    func corruptFramesAreDroppedAndCounted(kind: EmulatedCamera.Corruption, reason: String) async throws {
        let dir = try TemporaryDirectory()
        defer { dir.remove() }
        let emulated = EmulatedCamera()
        emulated.corruption = (kind, 4)
        let kernel = EmulatedV4L2([emulated])
        let movie = try SegmentedMovieOutput(.init(storageRoot: dir.path, segmentSeconds: 60, encoding: .streamCopy))
        let frames = FrameLog()
        let (session, log) = try startSession(
            device: camera(kernel), format: .size(width: 320, height: 240, pixelFormat: .mjpeg), fps: 30,
            outputs: [(movie, .init()), (frames.output, .init())])
        #expect(await waitUntil(seconds: 20) { frames.count >= 30 && log.drops.contains { $0.output.hasPrefix("camera") } })
        // Stop the camera's frames: every broken one it made is then dequeued, and its drop
        // report (at most a second later) must count exactly those, no fewer and no more.
        kernel.wedge(emulated, true)
        func reported() -> Int { log.drops.filter { $0.output.hasPrefix("camera") }.map(\.count).reduce(0, +) }
        let settled = await waitUntil(seconds: 20) { reported() == kernel.corruptFrames(of: emulated) }
        await stopAndDrain(session, log)
        let made = kernel.corruptFrames(of: emulated)
        #expect(settled && reported() == made, "reported \(reported()) corrupt frames, the camera made \(made)")
        // Every fourth frame is broken: thirty good ones came with about ten broken ones.
        #expect(made >= 5, "\(session.capturedFrameCount) good, \(made) corrupt")
        #expect(log.drops.allSatisfy { !$0.output.hasPrefix("camera") || $0.output == "camera (corrupt: \(reason))" })
        let decoded = try RecordingInspector.files(under: dir.path, endingWith: ".mkv").map { try RecordingInspector.decode($0) }
        let seqs = decoded.flatMap(\.sequences).compactMap { $0 }
        #expect(seqs.count == decoded.flatMap(\.sequences).count, "every recorded frame decodes")
        #expect(!seqs.isEmpty && seqs.allSatisfy { ($0 + 1) % 4 != 0 }, "no corrupt frame reached the file")
        #expect(seqs.count == movie.receivedFrameCount)
    }

    /// Corrupt frames are reported once a second; those since the last report must be reported
    /// when the session stops, not lost with it.
    @Test func corruptFramesSinceTheLastReportAreReportedAtStop() async throws {
        let emulated = EmulatedCamera()
        emulated.corruption = (.errorFlag, 2)
        let kernel = EmulatedV4L2([emulated])
        let (session, log) = try startSession(
            device: camera(kernel), format: .size(width: 160, height: 120, pixelFormat: .mjpeg), fps: 30, outputs: [])
        func reported() -> Int { log.drops.filter { $0.output.hasPrefix("camera") }.map(\.count).reduce(0, +) }
        // Just after a report, as soon as more corrupt frames have been read: stop.
        #expect(await waitUntil(seconds: 20) { reported() > 0 })
        #expect(await waitUntil(seconds: 20) { kernel.corruptFrames(of: emulated) > reported() })
        await stopAndDrain(session, log)
        #expect(reported() == kernel.corruptFrames(of: emulated), "\(kernel.corruptFrames(of: emulated) - reported()) corrupt frame(s) never reported")
    }

    @Test(arguments: [
        (EBUSY, "the camera is in use by another program (VIDIOC_S_FMT"),
        (EACCES, "/dev/video0: permission denied (open); add the user to the video group (sudo usermod -aG video $USER, then log in again)"),
        (EPERM, "/dev/video0: permission denied (open); add the user to the video group"),
        (ENOENT, "/dev/video0: no such camera (open: No such file or directory); run `vigil devices` to list cameras"),
    ])
    func openErrorsNameTheirCauseWhileOtherCamerasRecord(errno code: Int32, message: String) async throws {
        let good = EmulatedCamera(node: "/dev/video2", stableName: "usb-Good-video-index0")
        let bad = EmulatedCamera()
        let kernel = EmulatedV4L2([bad, good])
        let devices = V4L2Discovery(system: kernel).devices()
        if code == EBUSY { bad.isBusy = true } else { bad.openError = code }
        let frames = FrameLog()
        let (other, _) = try startSession(
            device: devices[1], format: .size(width: 160, height: 120, pixelFormat: .mjpeg), fps: 30, outputs: [(frames.output, .init())])
        let session = CaptureSession()
        try session.addInput(devices[0])
        try session.setFormat(.preset(.vga))
        try session.setFrameRate(30)
        let error = #expect(throws: CaptureError.self) { try session.startRunning() }
        #expect("\(error!)".contains(message))
        #expect("\(error!)".contains("/dev/video0"))
        let before = frames.count
        #expect(await waitUntil(seconds: 10) { frames.count > before + 10 })
        await other.stop()
        #expect(kernel.openFileCount == 0)
    }

    /// A driver that reports POLLHUP or POLLERR while the node is still there: the session ends
    /// as a disconnect (so the supervisor reopens the camera) and says which poll event it was.
    /// A hang-up is counted as unplugged (metrics, `VIGIL_CAUSE`), an error alone as disconnected.
    @Test(arguments: [(Int16(POLLHUP), "/dev/video0: the camera was disconnected (poll: hang-up)", LossCause.unplugged),
                      (Int16(POLLERR), "/dev/video0 stopped responding (poll reported an error): unplugged?", LossCause.disconnected)])
    func pollErrorsEndTheSessionAsADisconnectNamingTheEvent(events: Int16, reason: String, cause: LossCause) async throws {
        let emulated = EmulatedCamera()
        let kernel = EmulatedV4L2([emulated])
        let frames = FrameLog()
        let (session, log) = try startSession(
            device: camera(kernel), format: .size(width: 160, height: 120, pixelFormat: .mjpeg), fps: 30, outputs: [(frames.output, .init())])
        #expect(await waitUntil(seconds: 10) { frames.count >= 5 })
        kernel.reportOnPoll(emulated, events)
        #expect(await waitUntil(seconds: 10) { log.hasStopped }, "the session did not end")
        let interruptions = log.all.compactMap { if case .interrupted(_, _, let r) = $0 { return r } else { return nil } }
        #expect(interruptions == [reason])
        #expect(log.all.compactMap { if case .interrupted(_, let c, _) = $0 { return c } else { return nil } } == [cause])
        #expect(log.errors.isEmpty, "a disconnect is not reported as a failure: \(log.errors)")
        #expect(!session.isRunning)
        #expect(kernel.openFileCount == 0)
    }

    @Test func streamOnWithoutBandwidthSaysItIsUSBNotDisk() throws {
        let emulated = EmulatedCamera()
        emulated.streamOnError = ENOSPC
        let kernel = EmulatedV4L2([emulated])
        let session = CaptureSession()
        try session.addInput(camera(kernel))
        try session.setFormat(.preset(.hd720))
        try session.setFrameRate(30)
        let error = #expect(throws: CaptureError.self) { try session.startRunning() }
        #expect("\(error!)".contains("not enough USB bandwidth to start streaming (VIDIOC_STREAMON: No space left on device); use MJPEG"))
        #expect(kernel.openFileCount == 0 && kernel.mappingCount == 0)
    }

    @Test func controlsAreValidatedAndAppliedTogether() async throws {
        let emulated = EmulatedCamera()
        let kernel = EmulatedV4L2([emulated])
        let device = try camera(kernel)
        let frames = FrameLog()
        let (session, _) = try startSession(device: device, format: .preset(.vga), fps: 30, outputs: [(frames.output, .init())])
        session.beginConfiguration()
        try session.setControl("brightness", to: 10)
        try session.setControl("white_balance_temperature", to: 4603)
        try session.setControl("power_line_frequency", to: 2)
        try session.commitConfiguration()
        #expect(kernel.controlValue(CV4L2_CID_BRIGHTNESS, of: emulated) == 10)
        #expect(kernel.controlValue(CV4L2_CID_WHITE_BALANCE_TEMPERATURE, of: emulated) == 4600)
        #expect(kernel.controlValue(CV4L2_CID_POWER_LINE_FREQUENCY, of: emulated) == 2)
        #expect(session.controlValues["white_balance_temperature"] == 4600)

        // One bad value refuses the whole commit: nothing changes.
        session.beginConfiguration()
        try session.setControl("brightness", to: -20)
        try session.setControl("contrast", to: 500)
        let error = #expect(throws: CaptureError.self) { try session.commitConfiguration() }
        #expect("\(error!)".contains("contrast must be between 0 and 95, not 500"))
        #expect(kernel.controlValue(CV4L2_CID_BRIGHTNESS, of: emulated) == 10)
        #expect(session.controlValues["brightness"] == 10)

        let menuError = #expect(throws: CaptureError.self) { try session.setControl("exposure_auto", to: 2) }
        #expect("\(menuError!)".contains("choose one of 1 (Manual Mode), 3 (Aperture Priority Mode)"))
        let unknown = #expect(throws: CaptureError.self) { try session.setControl("zoom", to: 1) }
        #expect("\(unknown!)".contains("has no control zoom; it has brightness"))
        #expect(session.isRunning)
        await session.stop()
    }

    @Test func a100OpenStreamCloseCyclesLeakNoFdOrMapping() async throws {
        let emulated = EmulatedCamera()
        let kernel = EmulatedV4L2([emulated])
        let device = try camera(kernel)
        let frames = FrameLog()
        let session = CaptureSession()
        try session.addInput(device)
        try session.setFormat(.size(width: 320, height: 240, pixelFormat: .mjpeg))
        try session.setFrameRate(30)
        try session.addOutput(frames.output)
        var peak = (fds: 0, mappings: 0)
        for cycle in 0..<100 {
            // Every tenth cycle fails at STREAMON: error paths must release everything too.
            emulated.streamOnError = cycle % 10 == 9 ? ENOSPC : nil
            if cycle % 10 == 9 {
                #expect(throws: CaptureError.self) { try session.startRunning() }
                continue
            }
            let before = frames.count
            try session.startRunning()
            #expect(await waitUntil(seconds: 10) { frames.count > before })
            let live = kernel.liveKernelResources()
            peak = (max(peak.fds, live.fds), max(peak.mappings, live.mappings))
            await session.stop()
        }
        // While streaming: one node fd and 6 buffer files, each mapped by the driver and by Vigil.
        #expect(peak.fds == 7 && peak.mappings == 12, "the count itself must see the resources: \(peak)")
        #expect(kernel.openFileCount == 0)
        #expect(kernel.mappingCount == 0)
        let left = kernel.liveKernelResources()
        #expect(left.fds == 0 && left.mappings == 0, "leaked: \(left)")
    }
}
