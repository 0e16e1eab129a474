import Foundation
import CheckedMath
import Logging
import Media
import Plumbing
import Synchronization
import SystemPackage

/// Records continuously into files of `segmentSeconds` each (`AVCaptureMovieFileOutput`, cut
/// into segments). Segment boundaries sit on multiples of the segment length in wall-clock time
/// (a 60 s segment starts at :00); each segment starts with a keyframe and no frame is lost or
/// repeated across a boundary. A file is `NAME.partial` while written and renamed when done.
/// @unchecked as its base class: its own state is touched only on its worker thread.
public final class SegmentedMovieOutput: CaptureOutput, @unchecked Sendable {
    public enum Encoding: Sendable, Equatable {
        /// Encode to H.264 with libx264.
        case h264(EncoderSettings)
        /// Copy the camera's compressed frames (MJPEG, H.264, H.265) into the file without decoding.
        case streamCopy
    }

    public struct Settings: Sendable {
        public var storageRoot: String
        public var segmentSeconds: Int
        public var encoding: Encoding
        /// The container for MJPEG and encoded video; H.264/H.265 copied from the camera go into
        /// fragmented MP4 unless a container was chosen.
        public var container: Container
        private let containerWasChosen: Bool
        /// Frames that may wait for the encoder before late ones are dropped (nil: by need,
        /// from the frame rate and frame size; see `QueueSizing`).
        public var queueCapacity: Int?
        /// Drop frames when the encoder falls behind (live cameras) or wait (files, benchmarks).
        public var dropsLateFrames: Bool
        /// Records only inside this schedule (nil: always). Leaving it finalizes the open segment;
        /// coming back into it starts a new one.
        public var schedule: (any OutputSchedule)?
        /// Keep only the minutes with motion (nil: record everything).
        public var motionOnly: MotionOnly?

        /// `[[record]] mode = "motion"`: files hold what a motion output found, from `preSeconds`
        /// before the motion (from the keyframe before) to `postSeconds` after it; motion closer
        /// than that shares a file. Packets are held back `decisionDelaySeconds` (at least the
        /// pre-roll plus the time detection takes to be sure), so files are written that late.
        public struct MotionOnly: Sendable {
            public var timeline: MotionTimeline
            public var preSeconds: Double
            public var postSeconds: Double
            public var decisionDelaySeconds: Double

            public init(timeline: MotionTimeline, preSeconds: Double, postSeconds: Double, decisionDelaySeconds: Double) {
                self.timeline = timeline
                self.preSeconds = preSeconds
                self.postSeconds = postSeconds
                self.decisionDelaySeconds = max(decisionDelaySeconds, preSeconds)
            }
        }

        public init(
            storageRoot: String, segmentSeconds: Int = 60, encoding: Encoding = .h264(EncoderSettings()),
            container: Container? = nil, queueCapacity: Int? = nil, dropsLateFrames: Bool = true,
            schedule: (any OutputSchedule)? = nil, motionOnly: MotionOnly? = nil
        ) {
            self.storageRoot = storageRoot
            self.segmentSeconds = segmentSeconds
            self.encoding = encoding
            self.container = container ?? (encoding == .streamCopy ? .matroska : .fragmentedMP4)
            containerWasChosen = container != nil
            self.queueCapacity = queueCapacity
            self.dropsLateFrames = dropsLateFrames
            self.schedule = schedule
            self.motionOnly = motionOnly
        }

        /// The container a segment of frames in `format` goes into.
        func container(for format: PixelFormat) -> Container {
            format.isVideoCodec && !containerWasChosen ? .fragmentedMP4 : container
        }
    }

    public let settings: Settings

    /// Frames further apart than this are a gap in the recording: the file ends before it, and
    /// `vigil recordings` reports gaps by the same bound. Shorter pauses stay inside the file,
    /// which keeps their true times.
    public static let gapNanos: Int64 = 2_000_000_000

    // Worker-thread state.
    let converter = PictureConverter(range: .video)
    var encoder: VideoEncoder?
    var encoderKey: (width: Int, height: Int, format: PixelFormat)?
    let packet = Packet()
    var segment: SegmentFile?
    /// Frames sent to the encoder whose packets have not come out yet: (pts, wall time, first of a new segment).
    var inFlight: [(pts: Int64, wallNanos: Int64, startsSegment: Bool)] = []
    private var currentSlot: Int64 = .min
    var lastPTS: Int64 = .min
    var originMonotonic: Int64?
    /// The capture time of the last frame recorded (to find gaps).
    private var lastFrameMonotonic: Int64?
    /// After a failed write: the output is paused, and the first frame from this wall time on
    /// opens a segment if the room allows (`StorageRoom.mayWrite`), else asks again a second later.
    private var restartAfterFailureAt: Int64?
    private var lastFailureReport: Int64?
    /// The room under the storage root, shared with the other writers and the storage keeper.
    private lazy var room = StorageRoom.of(root: settings.storageRoot)
    let status = StatusBox()
    private var gate: ScheduleGate
    /// Stream copy: a new segment is due and starts at the next keyframe.
    var cutPending = false
    /// The runs of the camera's clock: a new one starts a new file at its first keyframe.
    var clockRuns = ClockRunWatch()
    /// Frames copied from the camera before a segment could start at a keyframe (reported).
    var framesBeforeKeyframe = 0
    /// The MJPEG description of the current size (a camera's MJPEG frames carry none).
    var mjpegStream: StreamDescription?
    /// H.264/H.265: the last frame copied, and whether a frame was dropped since (the frames
    /// after a lost one cannot be decoded: they are skipped up to the next keyframe).
    var lastCopiedSequence: UInt64?
    var skipsToKeyframe = false
    var framesSkippedAfterLoss = 0
    /// Capture-thread copy of the schedule, so frames outside it are never queued at all.
    private var admission: ScheduleGate
    /// Whether the worker has a segment or an encoder open (or packets held back); while it
    /// has, frames outside the schedule still go to the worker, whose first such frame closes them.
    private let isRecording = Atomic<Bool>(false)
    /// Frames that reached a file, and writes that failed (read by summaries on other threads).
    private let written = Atomic<Int>(0)
    private let failures = Atomic<Int>(0)
    /// The camera's live view, which reuses this output's H.264 packets (no second encoder).
    let live = Mutex<LiveMP4Feed?>(nil)
    /// The encoder's stream description, made once per encoder for the live feed.
    var liveStream: StreamDescription?
    /// Motion only: what is held back until it is known whether motion was near it.
    let preroll: PrerollDelay?
    /// Motion only: the wall-clock slot of the open segment.
    private var segmentSlot: Int64 = .min

    public init(_ settings: Settings) throws(CaptureError) {
        guard settings.segmentSeconds >= 1 else {
            throw .invalidSetting("segment length must be at least 1 second, not \(settings.segmentSeconds)")
        }
        self.settings = settings
        gate = ScheduleGate(settings.schedule)
        admission = ScheduleGate(settings.schedule)
        preroll = settings.motionOnly == nil ? nil : PrerollDelay()
        super.init(name: "movie", queueCapacity: settings.queueCapacity, dropsLateFrames: settings.dropsLateFrames, absorbsBursts: true)
        inFlight.reserveCapacity(256)
        if case .h264 = settings.encoding { EncoderThreading.h264Outputs.add(1, ordering: .relaxed) }
    }

    deinit {
        if case .h264 = settings.encoding { EncoderThreading.h264Outputs.subtract(1, ordering: .relaxed) }
    }

    /// Hands every encoded packet to `feed` too (nil: to none). Stream copy does not use it:
    /// the live output takes the camera's packets itself.
    public func shareEncodedPackets(with feed: LiveMP4Feed?) { live.withLock { $0 = feed } }

    /// Threads of the H.264 encoder opened last (0 before one was opened).
    public var encoderThreads: Int { status.threads }

    /// Frames written into files: what was recorded, where `receivedFrameCount` is what arrived.
    public var writtenFrameCount: Int { written.load(ordering: .relaxed) }
    /// Times a file could not be started or written (disk full, a header the muxer refused);
    /// each is in the log with its cause.
    public var failedWriteCount: Int { failures.load(ordering: .relaxed) }

    /// The file being written now, if any (for status displays).
    public var currentSegmentPath: String? { status.path }

    /// The picture size of the segments recorded, from their stream description: what a
    /// network camera's format does not say (its frames carry their size in their stream).
    public var recordedFrameSize: (width: Int, height: Int)? { status.frameSize }

    override func validate(format: DeviceFormat, settings connection: ConnectionSettings) throws(CaptureError) {
        if settings.encoding == .streamCopy {
            guard format.pixelFormat.isCompressed else {
                throw .streamCopyNeedsCompressedSource(output: "the movie output", format: format.pixelFormat)
            }
            if connection.transforms { throw .streamCopyCannotTransform(output: "the movie output") }
        } else if format.pixelFormat.isVideoCodec {
            throw .invalidSetting("the camera sends \(format.pixelFormat): record it with codec = \"copy\" (Vigil does not decode video to encode it again)")
        }
    }

    /// Outside its schedule the output costs nothing: once the worker has closed the segment,
    /// frames are not even queued, so its thread sleeps and holds no encoder.
    override func accepts(_ frame: CapturedFrame) -> Bool {
        admission.isActive(at: frame.wallNanos) || isRecording.load(ordering: .acquiring)
    }

    override func process(_ frame: CapturedFrame, _ connection: ConnectionSettings) {
        defer { isRecording.store(encoder != nil || segment != nil || preroll?.isEmpty == false, ordering: .releasing) }
        guard gate.isActive(at: frame.wallNanos) else {
            // Outside the schedule: the open segment ends with the last frame inside it.
            if encoder != nil || segment != nil { finish() }
            return
        }
        let slot = frame.wallNanos / (Int64(settings.segmentSeconds) * 1_000_000_000)
        var startsSegment = slot != currentSlot
        let followsGap = lastFrameMonotonic.map { frame.monotonicNanos.subtracting($0).map { $0 > Self.gapNanos } ?? true } ?? false
        if segment != nil && room.isHeld {
            // The keeper needs the room a sweep frees for the index: this segment ends here.
            pauseForRoom(retryAt: frame.wallNanos)
        }
        currentSlot = slot
        lastFrameMonotonic = frame.monotonicNanos
        let startsRun = clockRuns.startsFile(frame)
        if let retry = restartAfterFailureAt {
            // Paused: nothing is encoded or opened before the retry's frame, and that frame only
            // if the room allows. A new slot's frame in between opened a segment, and the retry
            // then one more in the same second (`_02`); each frame marked before the encoder gave
            // out the first opened one more; a header written at every retry to a full disk
            // raced the index for the room the sweep had freed for it.
            guard frame.wallNanos >= retry, room.mayWrite() else {
                if frame.wallNanos >= retry { restartAfterFailureAt = frame.wallNanos + 1_000_000_000 }
                return
            }
            restartAfterFailureAt = nil
            startsSegment = true
        }
        do {
            switch settings.encoding {
            case .streamCopy:
                try copy(frame, startsSegment: startsSegment || startsRun, breaks: frame.followsDiscontinuity || followsGap || startsRun)
            case .h264(let encoderSettings):
                try encode(frame, connection, encoderSettings, startsSegment: startsSegment || followsGap || startsRun)
            }
        } catch let error as MediaError where error.operation == "decode frame" {
            logger.warning("camera \(context?.cameraID ?? "?"): dropped a corrupt frame: \(error.message)")
        } catch {
            fail(error)
        }
    }

    override func finish() {
        if encoder != nil {
            do {
                try encoder!.sendEndOfStream()
                try drainPackets()
            } catch {
                fail(error)
            }
        }
        encoder = nil
        encoderKey = nil
        if liveStream != nil { live.withLock { $0 }?.reset() }
        liveStream = nil
        inFlight.removeAll(keepingCapacity: true)
        releaseHeld(all: true)
        closeSegment()
        currentSlot = .min
        lastPTS = .min
        originMonotonic = nil
        lastFrameMonotonic = nil
        cutPending = false
        clockRuns = ClockRunWatch()
        // An idle output keeps no pictures either (they come back with the next frame).
        converter.releaseBuffers()
        isRecording.store(false, ordering: .releasing)
    }

    /// The connection to a network camera was lost: its segment ends with the last frame that
    /// arrived; the next starts at the first keyframe after the reconnect.
    override func streamLost() {
        finish()
        lastCopiedSequence = nil
        skipsToKeyframe = false
    }

    // MARK: - Motion only

    /// Writes the held groups of pictures that are due (all of them when the recording stops):
    /// a group with motion near any of its frames is written, from its keyframe; one without
    /// ends the open file. Files are cut on the wall-clock grid at the first keyframe of a new slot.
    func releaseHeld(now: Int64 = .max, all: Bool = false) {
        guard let preroll, let motion = settings.motionOnly else { return }
        let pre = Int64(motion.preSeconds * 1e9), post = Int64(motion.postSeconds * 1e9)
        let segmentNanos = Int64(settings.segmentSeconds) * 1_000_000_000
        func write(_ group: ArraySlice<PrerollDelay.Held>) throws {
            guard group.contains(where: { motion.timeline.covers($0.wallNanos, pre: pre, post: post) }) else {
                closeSegment()
                return
            }
            for held in group {
                let slot = held.wallNanos / segmentNanos
                if held.breaksBefore { closeSegment() }
                if let open = segment, held.isKeyframe, slot != segmentSlot || (open.stream !== held.stream && !open.stream.matches(held.stream)) {
                    closeSegment()
                }
                if segment == nil {
                    guard held.isKeyframe else { continue }
                    try openSegment(stream: held.stream, container: held.container, startPTS: held.pts, wallNanos: held.wallNanos)
                    segmentSlot = slot
                }
                try held.bytes.withUnsafeBytes { bytes in
                    packet.borrow(bytes, pts: held.pts, keyframe: held.isKeyframe)
                    defer { packet.unref() }
                    try self.write(packet, pts: held.pts, presentationDelay: held.presentationDelay, wallNanos: held.wallNanos)
                }
            }
        }
        do {
            if all { try preroll.releaseAll(write) } else { try preroll.release(before: now - Int64(motion.decisionDelaySeconds * 1e9), write) }
        } catch {
            fail(error)
        }
    }

    // MARK: - Segments

    /// Presentation time from the frame's monotonic capture time, strictly increasing.
    func nextPTS(for frame: CapturedFrame) -> Int64 {
        if originMonotonic == nil { originMonotonic = frame.monotonicNanos }
        var pts = (frame.monotonicNanos - originMonotonic!) * 9 / 100_000
        if pts <= lastPTS { pts = lastPTS + 1 }
        lastPTS = pts
        return pts
    }

    func openSegment(stream: StreamDescription, container: Container? = nil, startPTS: Int64, wallNanos: Int64) throws {
        restartAfterFailureAt = nil
        guard let cameraID = context?.cameraID else { return }
        let container = container ?? settings.container
        let path = try StorageLayout(root: settings.storageRoot).segment(camera: cameraID, startingAt: wallNanos, extension: container.fileExtension)
        segment = try SegmentFile(finalPath: path, container: container, stream: stream, startPTS: startPTS, firstFrameWallNanos: wallNanos)
        status.path = path + StorageLayout.partialSuffix
        if stream.width > 0 && stream.height > 0 { status.frameSize = (stream.width, stream.height) }
        emit(.segmentStarted(camera: cameraID, path: path, startWallNanos: wallNanos))
    }

    /// Writes a packet into the open segment; after a failure, the first successful write says
    /// that recording resumed.
    func write(_ packet: Packet, pts: Int64, presentationDelay: Int64 = 0, wallNanos: Int64) throws {
        guard let segment else { return }
        try segment.write(packet, pts: pts, presentationDelay: presentationDelay, wallNanos: wallNanos)
        written.add(1, ordering: .relaxed)
        if lastFailureReport != nil {
            lastFailureReport = nil
            logger.notice("camera \(context?.cameraID ?? "?"): recording resumed in \(segment.finalPath)")
        }
    }

    func closeSegment() {
        guard let current = segment else { return }
        segment = nil
        status.path = nil
        do {
            if let info = try current.finalize() {
                if let cameraID = context?.cameraID { emit(.segmentFinished(camera: cameraID, info)) }
            } else {
                logger.warning("camera \(context?.cameraID ?? "?"): removed \(current.partialPath): writing failed before any frame reached the disk")
                if let cameraID = context?.cameraID { emit(.segmentDiscarded(camera: cameraID, path: current.finalPath)) }
            }
        } catch {
            report("could not finalize \(current.partialPath): \(error)")
        }
    }

    /// A write failed (disk full, I/O error): keep what was written, say what to do, and start
    /// a new segment about a second later so recording resumes as soon as the disk allows.
    private func fail(_ error: Error) {
        failures.add(1, ordering: .relaxed)
        let code = (error as? MediaError)?.errno ?? (error as? CaptureError)?.errno
        // Before the segment's end is announced: the keeper then holds every writer back until
        // the index has written it.
        if code?.isDiskFull == true { room.writerFoundDiskFull() }
        pauseForRoom(retryAt: SystemClocks.wallNanos() + 1_000_000_000)
        // Retries happen every second; say so once, then at most every 30 s while it lasts.
        let now = SystemClocks.monotonicNanos()
        if let last = lastFailureReport, now - last < 30_000_000_000 { return }
        lastFailureReport = now
        let advice = code?.isDiskFull == true
            ? "the disk is full: free space under \(settings.storageRoot); recording resumes by itself"
            : "recording resumes with a new segment"
        report("recording failed (\(error)); \(advice)", errno: code)
    }

    /// Ends the open segment with what reached the disk and pauses until `retryAt`.
    private func pauseForRoom(retryAt: Int64) {
        closeSegment()
        restartAfterFailureAt = retryAt
        // Frames still inside the encoder open nothing when they come out: only the retry's does.
        for i in inFlight.indices { inFlight[i].startsSegment = false }
    }

    private func report(_ message: String, errno: Errno? = nil) {
        let camera = context?.cameraID ?? "?"
        logger.error("camera \(camera): \(message)")
        emit(.runtimeError(camera: camera, message: message, errno: errno))
    }
}
