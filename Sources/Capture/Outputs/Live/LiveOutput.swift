import Foundation
import Media
import Synchronization

/// A camera's live view: its latest frame as a JPEG on request, a shared MJPEG stream and, for
/// H.264, fragmented MP4 (`mp4`). Attached to the camera's session for as long as the camera
/// records (it costs next to nothing when nobody watches):
///
/// - the capture thread keeps a reference to the latest raw or MJPEG frame (no copy, no wake-up);
/// - H.264/H.265 frames are added to the run since the last keyframe by the capture thread
///   itself (one copy into a reused buffer; muxed in memory only while fMP4 viewers exist,
///   whose queues never block): no worker wakes per frame, which cost about 7 % of a
///   network camera's CPU;
/// - while MJPEG viewers exist, at most `mjpegFramesPerSecond` frames a second go to the worker,
///   which makes ONE JPEG of each for all viewers (the camera's own JPEG when it sends MJPEG).
///
/// Its worker has its own small queue that drops late frames, like every output, and viewers
/// have their own (`LiveViewer`): nothing here can slow capture or the other outputs.
/// @unchecked as its base class: its worker state is touched only on its worker thread, the
/// capture-thread state only in `accepts`.
public final class LiveOutput: CaptureOutput, @unchecked Sendable {
    /// JPEGs a second sent to MJPEG viewers (and made, for cameras that do not send JPEG).
    public static let mjpegFramesPerSecond = 10.0
    /// JPEG quality of encoded live frames and snapshots.
    public static let quality = 80

    /// H.264 for live viewers: the camera's own packets, or those its recording encodes.
    public let mp4 = LiveMP4Feed()
    private let mjpegViewers = LiveViewerSet()
    /// The latest raw or MJPEG frame, held (not copied) by the capture thread.
    private let latest = Mutex<CapturedFrame?>(nil)
    private let connection: Mutex<ConnectionSettings>
    /// The camera sends H.264/H.265 (no raw or JPEG frame to show as MJPEG).
    private let cameraSendsVideoCodec = Atomic<Bool>(false)

    // Capture thread only.
    private var lastMJPEGQueued: Int64?
    private var lastVideoSequence: UInt64?
    private var originMonotonic: Int64?
    private var lastDTS: Int64 = .min
    /// Set by the worker when the stream ended (session stop, camera lost): the capture thread
    /// starts its video timing afresh with the next frame.
    private let videoRestarts = Atomic<Bool>(false)
    // Worker thread only.
    private let stills = StillMaker()
    /// Set by the worker while it holds a JPEG encoder, so that one frame comes to let it go.
    private let holdsEncoder = Atomic<Bool>(false)
    /// Snapshots are made here, off Swift's cooperative pool, one at a time.
    private let snapshotQueue = DispatchQueue(label: "vigil.live.snapshot")
    private let snapshotStills = StillMaker()

    public init(connection: ConnectionSettings = .init()) {
        self.connection = Mutex(connection)
        super.init(name: "live", queueCapacity: nil, dropsLateFrames: true)
    }

    /// A reload changed the camera's rotation or mirroring.
    public func setConnection(_ settings: ConnectionSettings) { connection.withLock { $0 = settings } }

    /// MJPEG viewers plus fMP4 viewers of this camera.
    public var viewerCount: Int { mjpegViewers.viewerCount + mp4.viewerCount }

    // MARK: - Viewers

    /// A new MJPEG viewer: JPEGs at up to `mjpegFramesPerSecond`, the newest when it is slow.
    /// Nil for a camera that sends H.264/H.265 only (its live view is `mp4Viewer()`).
    public func mjpegViewer() -> LiveViewer? {
        if cameraSendsVideoCodec.load(ordering: .relaxed) { return nil }
        let viewer = LiveViewer(kind: .mjpeg) { [weak self] v in self?.mjpegViewers.remove(v) }
        mjpegViewers.add(viewer)
        return viewer
    }

    /// A new fMP4 viewer, or nil when the camera's live video is not H.264 (yet).
    public func mp4Viewer() -> LiveViewer? {
        guard mp4.isH264 == true else { return nil }
        let viewer = LiveViewer(kind: .mp4) { [weak self] v in self?.mp4.removeViewer(v) }
        mp4.addViewer(viewer)
        return viewer
    }

    // MARK: - Snapshot

    /// The latest frame as a JPEG, from memory: the camera's own JPEG for MJPEG, the latest raw
    /// frame encoded, or for H.264/H.265 the run since the last keyframe decoded.
    public func snapshot() async throws -> LiveImage {
        try await withCheckedThrowingContinuation { c in
            snapshotQueue.async { [self] in c.resume(with: Result { try makeSnapshot() }) }
        }
    }

    /// Runs on `snapshotQueue`. The frame's bytes are copied under the lock, so the frame
    /// can go back to its pool whatever happens to the session meanwhile.
    private func makeSnapshot() throws -> LiveImage {
        let settings = connection.withLock { $0 }
        let copy = latest.withLock { f -> (bytes: [UInt8], format: PixelFormat, width: Int, height: Int, wall: Int64, sequence: UInt64)? in
            guard let f else { return nil }
            return (Array(f.bytes), f.format, f.width, f.height, f.wallNanos, f.sequence)
        }
        if let copy {
            return try copy.bytes.withUnsafeBytes { bytes in
                try snapshotStills.jpeg(of: bytes, format: copy.format, width: copy.width, height: copy.height, settings, quality: Self.quality) { jpeg, w, h in
                    LiveImage(data: Data(jpeg), width: w, height: h, wallNanos: copy.wall, sequence: copy.sequence)
                }
            }
        }
        if let run = mp4.copyRun() {
            return try run.bytes.withUnsafeBytes { all in
                var start = 0
                let frames = run.ends.map { end in
                    defer { start = end }
                    return UnsafeRawBufferPointer(rebasing: all[start..<end])
                }
                return try snapshotStills.jpeg(ofRun: frames, stream: run.stream, settings, quality: Self.quality) { jpeg, w, h in
                    LiveImage(data: Data(jpeg), width: w, height: h, wallNanos: run.wallNanos, sequence: 0)
                }
            }
        }
        throw CaptureError.notRunning(camera: context?.cameraID ?? "(not started)")
    }

    // MARK: - Frames

    override func accepts(_ frame: CapturedFrame) -> Bool {
        if frame.format.isVideoCodec {
            if !cameraSendsVideoCodec.load(ordering: .relaxed) { cameraSendsVideoCodec.store(true, ordering: .relaxed) }
            appendVideo(frame)
            return false
        }
        if cameraSendsVideoCodec.load(ordering: .relaxed) { cameraSendsVideoCodec.store(false, ordering: .relaxed) }
        frame.retain()
        let previous = latest.withLock { l -> CapturedFrame? in
            defer { l = frame }
            return l
        }
        previous?.release()
        if mjpegViewers.isEmpty { return holdsEncoder.load(ordering: .relaxed) }
        // At most `mjpegFramesPerSecond`, with a little slack for the camera's jitter.
        let interval = Int64(1e9 / Self.mjpegFramesPerSecond * 0.9)
        if let last = lastMJPEGQueued, frame.monotonicNanos - last < interval { return false }
        lastMJPEGQueued = frame.monotonicNanos
        return true
    }

    /// Capture thread: an H.264/H.265 frame joins the run (and goes to fMP4 viewers).
    private func appendVideo(_ frame: CapturedFrame) {
        if videoRestarts.exchange(false, ordering: .acquiring) {
            (lastVideoSequence, originMonotonic, lastDTS) = (nil, nil, .min)
        }
        guard let stream = frame.stream else { return }
        let follows = lastVideoSequence.map { frame.sequence == $0 &+ 1 } ?? true
        lastVideoSequence = frame.sequence
        mp4.append(
            frame.bytes, dts: nextDTS(frame.monotonicNanos), presentationDelay: frame.presentationDelayNanos * 9 / 100_000,
            keyframe: frame.isKeyframe, stream: stream, follows: follows, wallNanos: frame.wallNanos)
    }

    override func process(_ frame: CapturedFrame, _ connection: ConnectionSettings) {
        guard !mjpegViewers.isEmpty else {
            // The last viewer left: the encoder and its pictures go until the next one comes.
            stills.releaseBuffers()
            holdsEncoder.store(false, ordering: .relaxed)
            return
        }
        do {
            let jpeg = try stills.jpeg(of: frame, connection, quality: Self.quality) { bytes, _, _ in Data(bytes) }
            holdsEncoder.store(stills.holdsBuffers, ordering: .relaxed)
            mjpegViewers.offer(jpeg, keyframe: true)
        } catch {
            logger.warning("camera \(context?.cameraID ?? "?"): live view skipped a frame: \(error)")
        }
    }

    /// Decode time for the fMP4 feed, from the capture time (which follows the camera's decode
    /// order), strictly increasing.
    private func nextDTS(_ monotonicNanos: Int64) -> Int64 {
        if originMonotonic == nil { originMonotonic = monotonicNanos }
        var dts = (monotonicNanos - originMonotonic!) * 9 / 100_000
        if dts <= lastDTS { dts = lastDTS + 1 }
        lastDTS = dts
        return dts
    }

    override func finish() {
        latest.withLock { l -> CapturedFrame? in
            defer { l = nil }
            return l
        }?.release()
        videoRestarts.store(true, ordering: .releasing)
        lastMJPEGQueued = nil
        stills.releaseBuffers()
        holdsEncoder.store(false, ordering: .relaxed)
        // The camera stopped: viewers end (a page reconnects), the run is forgotten.
        mjpegViewers.closeAll()
        mp4.reset()
    }

    override func streamLost() {
        videoRestarts.store(true, ordering: .releasing)
        mp4.reset()
    }
}

/// A live snapshot.
public struct LiveImage: Sendable {
    /// JPEG file bytes.
    public let data: Data
    public let width: Int
    public let height: Int
    /// When the frame was captured (Unix epoch, nanoseconds).
    public let wallNanos: Int64
    /// The camera's frame counter (0 for a frame decoded from H.264).
    public let sequence: UInt64
}
