import Capture
import CaptureTesting
import Foundation
import Media
import Testing

@Suite(.timeLimit(.minutes(2))) struct CaptureSessionTests {
    /// A camera with only two sizes, in YUYV and MJPEG, 5–30 fps.
    private func smallCamera() -> CaptureDevice {
        SyntheticCamera.device(index: 7, sizes: [(320, 240), (640, 480)], frameRates: 5...30)
    }

    @Test func presetsResolveToRealFormats() throws {
        let formats = smallCamera().formats
        #expect(Preset.vga.resolve(in: formats) == DeviceFormat(pixelFormat: .mjpeg, width: 640, height: 480, frameRates: 5...30))
        #expect(Preset.low.resolve(in: formats)?.width == 320)
        #expect(Preset.high.resolve(in: formats)?.width == 640)
        #expect(Preset.photo.resolve(in: formats)?.width == 640)
        #expect(Preset.medium.resolve(in: formats)?.width == 640)
        #expect(Preset.hd720.resolve(in: formats) == nil)
        let yuyvOnly = formats.filter { $0.pixelFormat == .yuyv422 }
        #expect(Preset.vga.resolve(in: yuyvOnly)?.pixelFormat == .yuyv422)

        let session = CaptureSession()
        try session.addInput(smallCamera())
        #expect(session.canSetPreset(.vga))
        #expect(!session.canSetPreset(.hd1080))
        try session.setFormat(.preset(.low))
        try session.setFrameRate(15)
        #expect(session.activeFormat?.width == 320)
        #expect(throws: CaptureError.self) { try session.setFormat(.preset(.hd720)) }
        #expect(session.activeFormat?.width == 320)
    }

    @Test func refusedCommitKeepsThePreviousConfigurationRunning() async throws {
        let frames = FrameLog()
        let (session, _) = try startSession(
            device: smallCamera(), format: .size(width: 320, height: 240, pixelFormat: .yuyv422), fps: 20,
            outputs: [(frames.output, .init())])
        #expect(await waitUntil(seconds: 10) { frames.count >= 5 })

        session.beginConfiguration()
        try session.setFormat(.size(width: 1000, height: 1000, pixelFormat: nil))
        try session.setFrameRate(25)
        let error = #expect(throws: CaptureError.self) { try session.commitConfiguration() }
        #expect("\(error!)".contains("does not support 1000x1000; it offers 320x240, 640x480"))
        #expect(session.isRunning)
        #expect(session.activeFormat?.width == 320)
        #expect(session.frameRate == 20)
        let before = frames.count
        #expect(await waitUntil(seconds: 10) { frames.count >= before + 5 })
        #expect(frames.all.allSatisfy { $0.width == 320 })

        // An impossible frame rate is refused the same way.
        #expect(throws: CaptureError.self) { try session.setFrameRate(90) }
        #expect(session.frameRate == 20)

        // A valid commit switches the running camera.
        try session.setFormat(.size(width: 640, height: 480, pixelFormat: .yuyv422))
        #expect(session.activeFormat?.width == 640)
        let switched = frames.count
        #expect(await waitUntil(seconds: 10) { frames.all.dropFirst(switched).contains { $0.width == 640 } })
        await session.stop()
        #expect(!session.isRunning)
    }

    @Test func aSlowOutputDropsItsOwnFramesOnly() async throws {
        let slow = FrameLog(name: "slow", delayPerFrame: 0.25, queueCapacity: 2)
        let fast = FrameLog(name: "fast")
        let (session, log) = try startSession(
            format: .size(width: 160, height: 120, pixelFormat: .yuyv422), fps: 30,
            outputs: [(slow.output, .init()), (fast.output, .init())])
        #expect(await waitUntil(seconds: 20) { fast.count >= 60 && !log.drops.isEmpty })
        await stopAndDrain(session, log)
        #expect(slow.output.droppedFrameCount > 0)
        #expect(log.drops.contains { $0.output == "slow" })
        #expect(!log.drops.contains { $0.output == "fast" })
        #expect(fast.output.droppedFrameCount == 0)
        let seqs = fast.all.map(\.sequence)
        #expect(seqs == Array(0..<UInt64(session.capturedFrameCount)))
        #expect(slow.count + slow.output.droppedFrameCount == session.capturedFrameCount)
    }

    @Test func disabledConnectionGetsNoFrames() async throws {
        let off = FrameLog(name: "off")
        let on = FrameLog(name: "on")
        let (session, _) = try startSession(
            format: .size(width: 160, height: 120, pixelFormat: .yuyv422), fps: 30,
            outputs: [(off.output, ConnectionSettings(isEnabled: false)), (on.output, .init())])
        #expect(await waitUntil(seconds: 10) { on.count >= 10 })
        // Ten frames went to the enabled output; none may have reached the disabled one.
        #expect(off.count == 0, "the disabled output received \(off.count) frame(s)")
        // Frames up to sequence `capturedBefore - 2` were handed out before the switch (the
        // counter rises just before a frame is delivered): none of them may reach it later either.
        let capturedBefore = UInt64(session.capturedFrameCount)
        try session.setConnection(for: off.output, ConnectionSettings(isEnabled: true))
        #expect(await waitUntil(seconds: 10) { off.count >= 5 })
        await session.stop()
        let first = try #require(off.all.first)
        #expect(first.sequence + 1 >= capturedBefore, "frame \(first.sequence), captured while disabled, was delivered")
        // Once enabled, it gets every frame from then on.
        let seqs = off.all.map(\.sequence)
        #expect(seqs == Array(first.sequence..<first.sequence + UInt64(seqs.count)))
    }

    @Test func photoOnDemand() async throws {
        let photos = PhotoOutput()
        await #expect(throws: CaptureError.self) { _ = try await photos.capturePhoto() }
        let (session, _) = try startSession(
            format: .size(width: 320, height: 240, pixelFormat: .yuyv422), fps: 15, outputs: [(photos, .init())])
        let photo = try await photos.capturePhoto(PhotoSettings(quality: 70))
        let second = try await photos.capturePhoto()
        await session.stop()
        #expect(photo.width == 320 && photo.height == 240)
        #expect(second.sequence > photo.sequence)
        let dir = try TemporaryDirectory()
        defer { dir.remove() }
        let path = dir.path + "/photo.jpg"
        try photo.data.write(to: URL(fileURLWithPath: path))
        #expect(try RecordingInspector.decode(path).sequences == [UInt32(photo.sequence)])
        await #expect(throws: CaptureError.self) { _ = try await photos.capturePhoto() }
    }

    @Test func startingWithoutACameraSaysSo() {
        let session = CaptureSession()
        #expect(throws: CaptureError.noInput) { try session.startRunning() }
    }
}
