@testable import Capture
import CaptureTesting
import Foundation
import Media
import Plumbing
import Testing

/// Memory and threads sized by need: queues by frame rate and frame size, the frame pool by
/// what was in use lately, encoder threads by cameras and cores, nothing held while idle.
@Suite(.timeLimit(.minutes(2))) struct ResourceSizingTests {
    @Test func queuesHoldAQuarterSecondBoundedByTwelveMebibytesOfRawFrames() {
        let yuyv720 = 1280 * 720 * 2, yuyv1080 = 1920 * 1080 * 2
        #expect(QueueSizing.budget(frameRate: 30, frameBytes: yuyv720).frames == 6)  // 12 MiB / 1.76 MiB
        #expect(QueueSizing.budget(frameRate: 30, frameBytes: yuyv1080).frames == 3)
        #expect(QueueSizing.budget(frameRate: 15, frameBytes: 640 * 480 * 2).frames == 4)  // a quarter second
        #expect(QueueSizing.budget(frameRate: 30, frameBytes: 0).frames == 8)  // MJPEG elsewhere: time only
        #expect(QueueSizing.budget(frameRate: 1, frameBytes: 160 * 120 * 2).frames == 2)
        // Raw frames are never a burst (the driver drops frames itself): a recording's queue too.
        #expect(QueueSizing.budget(frameRate: 30, frameBytes: yuyv720, absorbsBursts: true).frames == 6)
    }

    /// A recording of compressed frames holds ten seconds of them, at most 64 MiB: a network
    /// camera's stall of several seconds and the burst after it lose nothing (its queue held a
    /// quarter second, 3 frames at 10 fps, and "movie dropped 7 frame(s)").
    @Test func aRecordingsQueueHoldsTenSecondsOfCompressedFramesBoundedInBytes() {
        #expect(QueueSizing.budget(frameRate: 10, frameBytes: 0, absorbsBursts: true) == .init(frames: 100, bytes: 64 << 20))
        #expect(QueueSizing.budget(frameRate: 25, frameBytes: 0, interFrameCoded: true, absorbsBursts: true).frames == 250)
        // A frame rate from a camera is bounded before it sizes anything.
        #expect(QueueSizing.budget(frameRate: .infinity, frameBytes: 0, absorbsBursts: true).frames == 10_000)
        #expect(QueueSizing.budget(frameRate: .nan, frameBytes: 0, absorbsBursts: true).frames == 10)
    }

    /// The byte budget holds whatever the frame count: past it a frame is dropped, and a frame
    /// alone in the queue is always taken, however large.
    @Test func aWorkersQueueDropsPastItsByteBudget() {
        let pool = FramePool()
        let gate = DispatchSemaphore(value: 0), started = DispatchSemaphore(value: 0)
        let worker = OutputWorker(name: "bytes", camera: nil, budget: .init(frames: 100, bytes: 10_000), dropsLateFrames: true) { _, _ in
            started.signal()
            gate.wait()
        }
        func frame(_ bytes: Int) -> CapturedFrame {
            let f = pool.take(capacity: bytes)
            f.byteCount = bytes
            return f
        }
        var admissions: [OutputWorker.Admission] = []
        // The first is taken by the worker at once (it blocks on the gate); then 4 + 4 KiB fit.
        for bytes in [20_000, 4_000, 4_000, 4_000] {
            let f = frame(bytes)
            let admission = worker.enqueue(f, .init())
            if admission != .queued { f.release() }
            admissions.append(admission)
            // The worker has taken the first frame off the queue before the next comes.
            if admissions.count == 1 { started.wait() }
        }
        #expect(admissions == [.queued, .queued, .queued, .dropped])
        for _ in 0..<3 { gate.signal() }
        worker.shutdown {}
    }

    @Test func aMovieOutputOnA720pYUYVCameraQueuesSixFramesNotThirty() async throws {
        let dir = try TemporaryDirectory()
        defer { dir.remove() }
        let movie = try SegmentedMovieOutput(.init(storageRoot: dir.path, segmentSeconds: 60))
        let (session, log) = try startSession(
            format: .size(width: 1280, height: 720, pixelFormat: .yuyv422), fps: 30, outputs: [(movie, .init())])
        #expect(movie.queueCapacity == 6)
        await stopAndDrain(session, log)
    }

    @Test func thePoolLetsGoOfFramesABurstNeededOnceAWindowNeedsFewer() {
        let pool = FramePool(window: 4)
        let burst = (0..<10).map { _ in pool.take(capacity: 4096) }
        for frame in burst { frame.release() }
        // Right after the burst the frames are kept: the same need may come back.
        #expect(pool.frameCount == 10)
        // Two windows of one frame at a time: the first still saw the burst, the second did not;
        // the frame in use is one of the kept ones, never a new one.
        let seen = Set(burst.map(ObjectIdentifier.init))
        for _ in 0..<8 {
            let frame = pool.take(capacity: 4096)
            #expect(seen.contains(ObjectIdentifier(frame)), "a frame was allocated while spares were kept")
            frame.release()
        }
        #expect(pool.frameCount == 1)
    }

    /// A network camera's frame is assembled packet by packet and grows when a keyframe is
    /// larger than its buffer (512 KiB): the bytes already copied stay, and the grown buffer is
    /// given back like any other (it was freed as heap memory once, which aborts the process).
    @Test func aFrameGrownWhileBeingAssembledKeepsItsBytesAndIsFreedLikeAnyOther() {
        let pool = FramePool(window: 2)
        do {
            let frame = pool.take(capacity: 4096)
            let head = (0..<4096).map { UInt8(truncatingIfNeeded: $0 &* 7) }
            frame.storage.copyBytes(from: head)
            frame.reserve(3 * 1024 * 1024, keeping: head.count)
            #expect(frame.storage.count >= 3 * 1024 * 1024)
            #expect(Array(frame.storage[0..<head.count]) == head)
            frame.storage[frame.storage.count - 1] = 1
            frame.release()
            // Reused at its grown size, then let go by the pool (a window that needed none spare).
            let again = pool.take(capacity: 4096)
            #expect(again === frame)
            #expect(again.storage.count >= 3 * 1024 * 1024)
            again.release()
        }
        for _ in 0..<4 { pool.take(capacity: 4096).release() }
        #expect(pool.frameCount == 1)
    }

    @Test func encodersGetOneThreadEachWhenCamerasOutnumberCores() {
        #expect(EncoderThreading.threads(encoders: 8, cores: 2) == 1)
        #expect(EncoderThreading.threads(encoders: 2, cores: 2) == 1)
        #expect(EncoderThreading.threads(encoders: 1, cores: 2) == 2)
        #expect(EncoderThreading.threads(encoders: 3, cores: 8) == 2)
        #expect(EncoderThreading.threads(encoders: 0, cores: 4) == 4)
    }

    @Test func aRecordingAmongAsManyH264CamerasAsCoresEncodesWithOneThreadUnlessConfigured() async throws {
        let dir = try TemporaryDirectory()
        defer { dir.remove() }
        // Other H.264 outputs of this process (other cameras) count, recording or not.
        let others = try (1..<ProcessInfo.processInfo.activeProcessorCount).map { _ in
            try SegmentedMovieOutput(.init(storageRoot: dir.path))
        }
        let automatic = try SegmentedMovieOutput(.init(storageRoot: dir.path, segmentSeconds: 60))
        let configured = try SegmentedMovieOutput(.init(
            storageRoot: dir.path, segmentSeconds: 60, encoding: .h264(EncoderSettings(threads: 3))))
        for movie in [automatic, configured] {
            let (session, log) = try startSession(
                device: SyntheticCamera.device(index: movie === automatic ? 0 : 1),
                format: .size(width: 160, height: 120, pixelFormat: .yuyv422), fps: 30, outputs: [(movie, .init())])
            #expect(await waitUntil(seconds: 20) { movie.receivedFrameCount >= 3 })
            await stopAndDrain(session, log)
            // Two where the few frames crossed a minute of the wall clock (segments are cut there).
            #expect(log.segments.count == 1 || log.segments.count == 2)
            if let segment = log.segments.first { #expect(RecordingInspector.ffprobeProblem(segment.path) == nil) }
        }
        #expect(automatic.encoderThreads == 1)
        #expect(configured.encoderThreads == 3)
        withExtendedLifetime(others) {}
    }

    @Test func aMovieOutputOutsideItsScheduleIsNotEvenSentFrames() async throws {
        let dir = try TemporaryDirectory()
        defer { dir.remove() }
        let movie = try SegmentedMovieOutput(.init(storageRoot: dir.path, segmentSeconds: 60, schedule: NeverActive()))
        let frames = FrameLog(dropsLateFrames: false)
        let (session, log) = try startSession(
            format: .size(width: 160, height: 120, pixelFormat: .yuyv422), fps: 30,
            outputs: [(movie, .init()), (frames.output, .init())])
        #expect(await waitUntil(seconds: 20) { frames.all.count >= 10 })
        await stopAndDrain(session, log)
        // Its worker slept: no frame queued, no encoder opened, no file.
        #expect(movie.receivedFrameCount == 0)
        #expect(movie.encoderThreads == 0)
        #expect(log.segments.isEmpty)
    }

    @Test func aTimelapseKeepsNoPicturesBetweenStillsFiveSecondsApartOrMore() throws {
        let dir = try TemporaryDirectory()
        defer { dir.remove() }
        let pool = FramePool()
        for (interval, keeps) in [(1, true), (5, false)] {
            let timelapse = try TimelapseOutput(.init(storageRoot: dir.path, intervalSeconds: interval))
            timelapse.attach(OutputContext(cameraID: "cam\(interval)", events: EventBroadcaster(), frameRate: 30))
            defer { timelapse.detach() }
            let frame = pool.take(capacity: 160 * 120 * 2)
            frame.storage.initializeMemory(as: UInt8.self, repeating: 0x80)
            let instant = SystemClocks.wallNanos() / 1_000_000_000 * 1_000_000_000
            frame.setContents(byteCount: 160 * 120 * 2, format: .yuyv422, width: 160, height: 120, sequence: 0, monotonicNanos: 0, wallNanos: instant)
            timelapse.process(frame, ConnectionSettings())
            frame.release()
            #expect(timelapse.holdsStillBuffers == keeps, "interval \(interval) s")
        }
        let stills = FileManager.default.enumerator(atPath: dir.path)?.compactMap { $0 as? String }.filter { $0.hasSuffix(".jpg") } ?? []
        #expect(stills.count == 2)
    }
}

/// A schedule that is never active.
struct NeverActive: OutputSchedule {
    func state(atWallNanos wall: Int64) -> (isActive: Bool, untilWallNanos: Int64) { (false, .max) }
}
