import Foundation
import Media
import Synchronization

/// Motion detection as a session output (`[[motion]]`): a few pictures a second go to a
/// `MotionDetector` on the output's own thread, whose queue drops late frames, so detection can
/// never slow capture or recording. It reports `motionStarted`, `motionUpdated` while the event
/// goes on (its peak so far and a JPEG of the frame of peak motion, written under
/// `ROOT/CAMERA/events/`; at once, then at most every `updateIntervalNanos`) and `motionEnded`.
///
/// What a picture costs depends on what the camera sends: YUYV, NV12 and YUV 4:2:0 are read as
/// they are (their grey levels are the luma bytes); MJPEG is decoded at 1/2 to 1/8 of its size
/// (about 320 pixels wide), which JPEG gives almost for free; H.264/H.265 must be decoded
/// whole, every frame (each depends on the ones before), which is the one expensive case.
/// @unchecked as its base class: its own state is touched only on its worker thread, except
/// `nextAnalysisNanos`, which only the capture thread touches (`accepts`).
public final class MotionOutput: CaptureOutput, @unchecked Sendable {
    public struct Settings: Sendable, Equatable {
        public var motion: MotionSettings
        /// Mask polygons as the user wrote them ("x,y" corners in pixels or percent of the
        /// picture as recorded, that is after rotation and mirroring).
        public var masks: [String]
        public var storageRoot: String
        /// The camera its events and pictures are of (nil: the session's). Set when detection
        /// watches a camera's second, low-resolution stream (`detect_url`) in a session of its own.
        public var camera: String?
        /// Detects only inside this schedule (nil: always).
        public var schedule: (any OutputSchedule)?
        /// Sees every analysed picture, on the output's thread (`vigil motion test --camera`):
        /// its sample, the event change it made, and the detector (valid during the call).
        public var observer: (@Sendable (MotionDetector.Sample, MotionEventTracker.Change?, MotionDetector) -> Void)?

        public init(
            motion: MotionSettings = MotionSettings(), masks: [String] = [], storageRoot: String, schedule: (any OutputSchedule)? = nil,
            observer: (@Sendable (MotionDetector.Sample, MotionEventTracker.Change?, MotionDetector) -> Void)? = nil
        ) {
            self.motion = motion
            self.masks = masks
            self.storageRoot = storageRoot
            self.schedule = schedule
            self.observer = observer
        }

        public static func == (a: Settings, b: Settings) -> Bool {
            a.motion == b.motion && a.masks == b.masks && a.storageRoot == b.storageRoot && a.camera == b.camera
                && (a.schedule == nil) == (b.schedule == nil)
        }
    }

    public let settings: Settings
    /// Where motion was found, for a recording of motion only (`SegmentedMovieOutput.Settings.motionOnly`).
    public let timeline = MotionTimeline()
    /// Capture thread only: the schedule, and when the next picture is due.
    private var admission: ScheduleGate
    private var nextAnalysisNanos: Int64 = .min
    private let analysisInterval: Int64

    // Worker-thread state.
    private var gate: ScheduleGate
    private var detector: MotionDetector?
    private var detectorKey: (width: Int, height: Int, rotation: Rotation, mirrored: Bool)?
    private var tracker: MotionEventTracker
    private var mjpegDecoder: (decoder: VideoDecoder, reduction: Int)?
    private var streamDecoder: (decoder: VideoDecoder, stream: StreamDescription)?
    private var decoded: Picture?
    private var lastSequence: UInt64?
    private var waitsForKeyframe = false
    private var nextStreamAnalysisNanos: Int64 = .min
    private let stills = StillMaker()
    /// The JPEG of the frame of peak motion of the event (or candidate event) under way.
    private var peakJPEG: [UInt8] = []
    private var peakPercent = 0.0
    /// Where the event under way has its picture (chosen when first written), and whether
    /// `peakJPEG` is what that file holds.
    private var eventPicturePath: String?
    private var pictureIsSaved = false
    /// What the last `motionUpdated` said, and when the next may be sent (monotonic).
    private var reportedPeak = 0.0
    private var nextUpdateNanos: Int64 = .min
    private let analysed = Atomic<Int>(0)

    /// How often an event under way may be reported again (its peak grew or its picture changed):
    /// the review list shows a running event's size and picture, at one index write and one
    /// picture file every few seconds at most, never one per frame.
    static let updateIntervalNanos: Int64 = 5_000_000_000

    public init(_ settings: Settings) {
        self.settings = settings
        admission = ScheduleGate(settings.schedule)
        gate = ScheduleGate(settings.schedule)
        tracker = MotionEventTracker(settings: settings.motion)
        analysisInterval = Int64(1e9 / max(0.1, settings.motion.framesPerSecond))
        super.init(name: "motion", queueCapacity: 2, dropsLateFrames: true)
    }

    /// Pictures analysed so far (status, tests).
    public var analysedCount: Int { analysed.load(ordering: .relaxed) }

    /// Whether an event is under way (status).
    public private(set) var isInEvent: Bool {
        get { inEvent.load(ordering: .relaxed) }
        set { inEvent.store(newValue, ordering: .relaxed) }
    }
    private let inEvent = Atomic<Bool>(false)

    /// A few pictures a second, inside the schedule. H.264/H.265 frames all go through: each
    /// depends on the ones before, so the decoder needs every one (the worker picks which to analyse).
    override func accepts(_ frame: CapturedFrame) -> Bool {
        if frame.format.isVideoCodec { return admission.isActive(at: frame.wallNanos) || isInEvent }
        guard frame.monotonicNanos >= nextAnalysisNanos else { return false }
        guard admission.isActive(at: frame.wallNanos) || isInEvent else { return false }
        nextAnalysisNanos = frame.monotonicNanos + analysisInterval
        return true
    }

    override func process(_ frame: CapturedFrame, _ connection: ConnectionSettings) {
        guard gate.isActive(at: frame.wallNanos) else {
            // Leaving the schedule ends the event under way.
            end(tracker.finish())
            return
        }
        do {
            try analyse(frame, connection)
        } catch {
            // A corrupt frame is skipped; a compressed stream starts again at its next keyframe.
            waitsForKeyframe = frame.format.isVideoCodec
            streamDecoder?.decoder.reset()
        }
    }

    override func finish() {
        end(tracker.finish())
        detector = nil
        detectorKey = nil
        mjpegDecoder = nil
        streamDecoder = nil
        decoded = nil
        lastSequence = nil
        stills.releaseBuffers()
    }

    override func streamLost() { finish() }

    override func validate(format: DeviceFormat, settings connection: ConnectionSettings) throws(CaptureError) {
        for text in settings.masks {
            let size = connection.rotation.size(width: format.width, height: format.height)
            guard MotionSettings.mask(text, width: size.width, height: size.height) != nil else {
                throw .invalidSetting("motion mask \"\(text)\" is not a polygon inside the \(size.width)x\(size.height) picture: write at least three corners \"x,y\" in pixels or percent")
            }
        }
    }

    // MARK: - Pictures

    private func analyse(_ frame: CapturedFrame, _ connection: ConnectionSettings) throws {
        switch frame.format {
        case .yuyv422:
            try detect(frame, connection, width: frame.width, height: frame.height, luma: frame.bytes.baseAddress!, stride: frame.width * 2, step: 2)
        case .nv12, .yuv420p:
            try detect(frame, connection, width: frame.width, height: frame.height, luma: frame.bytes.baseAddress!, stride: frame.width, step: 1)
        case .mjpeg:
            // About 320 pixels wide: 1/2 of 640, 1/4 of 1280, 1/8 of 1920 and up.
            let reduction = (0...3).last { frame.width >> $0 >= 240 } ?? 0
            if mjpegDecoder?.reduction != reduction { mjpegDecoder = (try VideoDecoder(format: .mjpeg, reduction: reduction), reduction) }
            if decoded == nil { decoded = try Picture() }
            try mjpegDecoder!.decoder.decode(frame.bytes, into: decoded!)
            try detectDecoded(frame, connection)
        case .h264, .hevc:
            try decodeStream(frame, connection)
        }
    }

    /// H.264/H.265: every frame is decoded (from a keyframe on), a few a second are analysed.
    private func decodeStream(_ frame: CapturedFrame, _ connection: ConnectionSettings) throws {
        guard let stream = frame.stream else { return }
        if streamDecoder == nil || streamDecoder!.stream !== stream {
            streamDecoder = (try VideoDecoder(stream: stream), stream)
            waitsForKeyframe = true
        }
        if let last = lastSequence, frame.sequence != last &+ 1 { waitsForKeyframe = true }
        lastSequence = frame.sequence
        if waitsForKeyframe {
            guard frame.isKeyframe else { return }
            streamDecoder!.decoder.reset()
            waitsForKeyframe = false
        }
        if decoded == nil { decoded = try Picture() }
        guard try streamDecoder!.decoder.decodeNext(frame.bytes, into: decoded!), frame.monotonicNanos >= nextStreamAnalysisNanos else { return }
        nextStreamAnalysisNanos = frame.monotonicNanos + analysisInterval
        try detectDecoded(frame, connection)
    }

    private func detectDecoded(_ frame: CapturedFrame, _ connection: ConnectionSettings) throws {
        let picture = decoded!
        try picture.withLuma { luma, stride in
            try detect(frame, connection, width: picture.width, height: picture.height, luma: UnsafeRawPointer(luma), stride: stride, step: 1)
        }
    }

    private func detect(
        _ frame: CapturedFrame, _ connection: ConnectionSettings, width: Int, height: Int, luma: UnsafeRawPointer, stride: Int, step: Int
    ) throws {
        let key = (width, height, connection.rotation, connection.isMirrored)
        if detectorKey == nil || detectorKey! != key {
            end(tracker.finish())
            detector = MotionDetector(width: width, height: height, settings: cameraSettings(width: width, height: height, connection))
            detectorKey = key
        }
        let seconds = Double(frame.wallNanos) / 1e9
        let sample = detector!.analyse(luma: luma.assumingMemoryBound(to: UInt8.self), stride: stride, pixelStep: step, seconds: seconds)
        analysed.add(1, ordering: .relaxed)
        let moving = !sample.isLightSwitch && sample.changedPercent >= settings.motion.minAreaPercent
        // A new picture only when the peak grows by a quarter: a few per event at most.
        if moving && sample.changedPercent > peakPercent * 1.25 {
            peakPercent = sample.changedPercent
            keepThumbnail(of: frame, connection)
        }
        let change = tracker.add(sample)
        if moving && tracker.isInEvent {
            // The picture that confirms an event covers it from when its motion began.
            var from = frame.wallNanos
            if case .started(let start)? = change { from = Self.nanos(start) }
            timeline.noteMotion(from: from, to: frame.wallNanos)
        }
        settings.observer?(sample, change, detector!)
        switch change {
        case .started(let start)?:
            isInEvent = true
            nextUpdateNanos = .min
            if let camera = cameraName { emit(.motionStarted(camera: camera, startWallNanos: Self.nanos(start))) }
        case let change?:
            end(change)
        case nil:
            // Motion too short for an event: its picture is forgotten.
            if !tracker.isInEvent && !moving { peakPercent = 0 }
        }
        reportRunningEvent(nowNanos: frame.monotonicNanos)
    }

    /// The settings with the masks in the camera's own picture (the detector sees it before
    /// rotation and mirroring; masks are drawn on the picture as recorded).
    private func cameraSettings(width: Int, height: Int, _ connection: ConnectionSettings) -> MotionSettings {
        var motion = settings.motion
        let shown = connection.rotation.size(width: width, height: height)
        motion.masks = settings.masks.compactMap { MotionSettings.mask($0, width: shown.width, height: shown.height) }.map { polygon in
            polygon.map { Self.cameraPoint($0, rotation: connection.rotation, mirrored: connection.isMirrored) }
        }
        return motion
    }

    /// Where a point of the picture as shown lies in the camera's picture (fractions 0…1).
    static func cameraPoint(_ p: MotionSettings.Point, rotation: Rotation, mirrored: Bool) -> MotionSettings.Point {
        let u = mirrored ? 1 - p.x : p.x, v = p.y
        switch rotation {
        case .none: return .init(x: u, y: v)
        case .clockwise90: return .init(x: v, y: 1 - u)
        case .upsideDown: return .init(x: 1 - u, y: 1 - v)
        case .clockwise270: return .init(x: 1 - v, y: u)
        }
    }

    // MARK: - Events

    /// Keeps the JPEG of this frame as the event's picture. MJPEG is the camera's own JPEG;
    /// other frames are encoded (a few times per event at most: only when the peak grows).
    private func keepThumbnail(of frame: CapturedFrame, _ connection: ConnectionSettings) {
        do {
            if frame.format.isVideoCodec {
                try stills.jpeg(ofDecoded: decoded!, connection, quality: 80) { copyThumbnail($0) }
            } else {
                try stills.jpeg(of: frame, connection, quality: 80) { bytes, _, _ in copyThumbnail(bytes) }
            }
        } catch {
            logger.warning("camera \(context?.cameraID ?? "?"): no picture for the motion event: \(error)")
        }
    }

    private func copyThumbnail(_ bytes: UnsafeRawBufferPointer) {
        peakJPEG.removeAll(keepingCapacity: true)
        peakJPEG.append(contentsOf: bytes)
        pictureIsSaved = false
    }

    /// Reports the event under way when its peak grew or its picture changed: at once when it
    /// starts (its picture is that of the motion that started it), then at most every
    /// `updateIntervalNanos`, so that a long event is listed with its size and picture.
    private func reportRunningEvent(nowNanos: Int64) {
        guard let event = tracker.open, nowNanos >= nextUpdateNanos, let camera = cameraName,
              event.peak > reportedPeak || (!pictureIsSaved && !peakJPEG.isEmpty) else { return }
        nextUpdateNanos = nowNanos + Self.updateIntervalNanos
        reportedPeak = event.peak
        let picture = savePicture(camera: camera, start: event.start)
        emit(.motionUpdated(camera: camera, MotionEventInfo(
            startWallNanos: Self.nanos(event.start), endWallNanos: Self.nanos(event.lastMotion), peakPercent: event.peak, picturePath: picture)))
    }

    /// Writes the event's picture if it changed since last written; returns its path (nil: none saved).
    private func savePicture(camera: String, start: Double) -> String? {
        guard !pictureIsSaved, !peakJPEG.isEmpty else { return eventPicturePath }
        do {
            let path = try eventPicturePath ?? StorageLayout(root: settings.storageRoot).eventPicture(camera: camera, at: Self.nanos(start))
            try peakJPEG.withUnsafeBytes { try DurableFile.write($0, to: path) }
            eventPicturePath = path
            pictureIsSaved = true
        } catch {
            logger.error("camera \(camera): could not save the motion event's picture: \(error)")
        }
        return eventPicturePath
    }

    private func end(_ change: MotionEventTracker.Change?) {
        defer {
            peakPercent = 0
            peakJPEG.removeAll(keepingCapacity: true)
            eventPicturePath = nil
            pictureIsSaved = false
            reportedPeak = 0
        }
        guard case .ended(let start, let end, let peak)? = change else { return }
        isInEvent = false
        guard let camera = cameraName else { return }
        let thumbnail = savePicture(camera: camera, start: start)
        emit(.motionEnded(camera: camera, MotionEventInfo(
            startWallNanos: Self.nanos(start), endWallNanos: Self.nanos(end), peakPercent: peak, picturePath: thumbnail)))
    }

    /// The camera events are of.
    private var cameraName: String? { settings.camera ?? context?.cameraID }

    private static func nanos(_ seconds: Double) -> Int64 { Int64((seconds * 1e9).rounded()) }
}

/// A motion event, finished (`motionEnded`) or as far as it has gone (`motionUpdated`).
public struct MotionEventInfo: Sendable, Equatable {
    public var startWallNanos: Int64
    /// The last moment of motion so far (the quiet `gap_seconds` after it are not part of the event).
    public var endWallNanos: Int64
    /// The largest changed share of the picture so far, in percent.
    public var peakPercent: Double
    /// The JPEG of the frame of peak motion (nil if it could not be saved).
    public var picturePath: String?

    public init(startWallNanos: Int64, endWallNanos: Int64, peakPercent: Double, picturePath: String?) {
        self.startWallNanos = startWallNanos
        self.endWallNanos = endWallNanos
        self.peakPercent = peakPercent
        self.picturePath = picturePath
    }
}
