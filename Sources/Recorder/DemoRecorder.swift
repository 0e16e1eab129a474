import Capture
import Foundation
import Logging
import Media

/// `vigil demo`: records synthetic cameras into segments and timelapse stills until the
/// duration ends or the process is asked to stop, then finalizes every file.
public struct DemoRecorder {
    public struct Options: Sendable {
        public var outputDirectory: String
        public var durationSeconds: Double?
        public var cameraCount: Int
        /// Real cameras to record instead of synthetic ones (empty: synthetic).
        public var devices: [CaptureDevice] = []
        public var width: Int
        public var height: Int
        public var framesPerSecond: Double
        /// nil: the camera's preferred format at that size (MJPEG before YUYV).
        public var pixelFormat: PixelFormat?
        public var segmentSeconds: Int
        public var timelapseIntervalSeconds: Int
        public var encoding: SegmentedMovieOutput.Encoding

        public init(
            outputDirectory: String, durationSeconds: Double?, cameraCount: Int, width: Int, height: Int,
            framesPerSecond: Double, pixelFormat: PixelFormat?, segmentSeconds: Int, timelapseIntervalSeconds: Int,
            encoding: SegmentedMovieOutput.Encoding
        ) {
            self.outputDirectory = outputDirectory
            self.durationSeconds = durationSeconds
            self.cameraCount = cameraCount
            self.width = width
            self.height = height
            self.framesPerSecond = framesPerSecond
            self.pixelFormat = pixelFormat
            self.segmentSeconds = segmentSeconds
            self.timelapseIntervalSeconds = timelapseIntervalSeconds
            self.encoding = encoding
        }
    }

    let options: Options
    let logger = Logger(label: "vigil.demo")

    public init(options: Options) {
        self.options = options
    }

    /// Runs until the duration ends or `stopSignal` fires. Throws only when nothing could start.
    public func run(until stopSignal: StopSignal) async throws {
        let root = (options.outputDirectory as NSString).standardizingPath
        try StorageCheck.ensureWritable(root)
        var cameras: [StatusDisplay.Camera] = []
        var failures: [String] = []
        let devices = options.devices.isEmpty
            ? (0..<options.cameraCount).map { SyntheticCamera.device(index: $0) }
            : options.devices
        for device in devices {
            do {
                cameras.append(try start(device, root: root))
            } catch {
                failures.append("\(error)")
            }
        }
        // One camera failing to start never stops the others; with none started, say why once.
        guard !cameras.isEmpty else {
            throw SessionError.invalidSetting(Array(Set(failures)).sorted().joined(separator: "\n"))
        }
        for failure in failures { logger.error("not started: \(failure)") }
        let what = options.encoding == .streamCopy ? "stream copy (MJPEG in MKV)" : "H.264"
        for c in cameras where !options.devices.isEmpty {
            Console.line("  \(c.session.cameraID): \(c.session.device?.name ?? "") on \(c.session.device?.details.node ?? "?")")
        }
        let kind = options.devices.isEmpty ? "synthetic camera(s)" : "camera(s)"
        let formats = Set(cameras.compactMap { $0.session.activeFormat?.pixelFormat.rawValue }).sorted().joined(separator: "/")
        Console.line("Recording \(cameras.count) \(kind) at \(options.width)x\(options.height) \(formats) \(DeviceFormatText.rate(options.framesPerSecond)) fps into \(root)")
        Console.line("  \(options.segmentSeconds) s \(what) segments, a still every \(options.timelapseIntervalSeconds) s. "
            + (options.durationSeconds.map { "Stopping after \(DeviceFormatText.rate($0)) s; " } ?? "") + "Ctrl-C to stop.")

        let eventTasks = cameras.map { camera in
            let events = camera.session.events
            return Task.detached { [logger] in
                for await event in events { Self.log(event, logger) }
            }
        }
        let display = StatusDisplay(cameras: cameras, root: root)
        let deadline = options.durationSeconds.map { Clock.monotonicNanos() + Int64($0 * 1e9) }
        var polls = 0
        while !stopSignal.isRaised {
            if let deadline, Clock.monotonicNanos() >= deadline { break }
            if cameras.allSatisfy({ !$0.session.isRunning }) { break }
            if polls % 4 == 0 { display.tick() }
            polls += 1
            try? await Task.sleep(nanoseconds: 250_000_000)
        }
        display.tick()
        Console.line("Stopping: finalizing open segments…")
        await withTaskGroup(of: Void.self) { group in
            for c in cameras { group.addTask { await c.session.stop() } }
        }
        for t in eventTasks { t.cancel() }
        for c in cameras {
            let drops = (c.movie?.droppedFrameCount ?? 0) + (c.timelapse?.droppedFrameCount ?? 0)
            Console.line("\(c.session.cameraID): \(c.session.capturedFrameCount) frames, \(drops) dropped, \(c.timelapse?.skippedShotCount ?? 0) stills skipped")
        }
        Console.line("Recordings are in \(root). Play one with: ffplay FILE (or mpv/vlc)")
    }

    private func start(_ device: CaptureDevice, root: String) throws -> StatusDisplay.Camera {
        let session = CaptureSession()
        let movie = try SegmentedMovieOutput(.init(
            storageRoot: root, segmentSeconds: options.segmentSeconds, encoding: options.encoding))
        let timelapse = try TimelapseOutput(.init(storageRoot: root, intervalSeconds: options.timelapseIntervalSeconds))
        session.beginConfiguration()
        try session.addInput(device)
        try session.setFormat(.size(width: options.width, height: options.height, pixelFormat: options.pixelFormat))
        try session.setFrameRate(options.framesPerSecond)
        try session.addOutput(movie)
        try session.addOutput(timelapse)
        try session.commitConfiguration()
        try session.startRunning()
        return StatusDisplay.Camera(session: session, movie: movie, timelapse: timelapse)
    }

    static func log(_ event: SessionEvent, _ logger: Logger) {
        switch event {
        case .runtimeError, .interrupted: logger.error("\(event)")
        case .droppedFrames: logger.warning("\(event)")
        default: logger.info("\(event)")
        }
    }
}

enum DeviceFormatText {
    static func rate(_ r: Double) -> String { r == r.rounded() ? String(Int(r)) : String(r) }
}
