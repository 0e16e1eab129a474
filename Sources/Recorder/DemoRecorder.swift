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
        /// Where those cameras come and go (default: the machine's V4L2 devices).
        public var deviceSource: (any DeviceSource)?
        public var width: Int
        public var height: Int
        public var framesPerSecond: Double
        /// nil: the camera's preferred format at that size (MJPEG before YUYV).
        public var pixelFormat: PixelFormat?
        public var segmentSeconds: Int
        public var timelapseIntervalSeconds: Int
        public var encoding: SegmentedMovieOutput.Encoding
        /// Unplug and wedge synthetic cameras now and then (`--chaos`).
        public var chaos = false
        /// Seconds without a frame before a session is restarted.
        public var watchdogSeconds: Double = 10
        public var hooks: EventHooks?

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
        let root = URL(fileURLWithPath: options.outputDirectory).standardizedFileURL.path
        FileMode.standard.apply()
        try StorageCheck.ensureWritable(root)
        let synthetic = options.devices.isEmpty ? SyntheticDeviceSource(count: options.cameraCount) : nil
        let source: any DeviceSource = synthetic ?? options.deviceSource ?? V4L2DeviceSource()
        let devices = synthetic?.cameras.map(\.device) ?? options.devices
        let format = FormatRequest.size(width: options.width, height: options.height, pixelFormat: options.pixelFormat)

        // Refuse what no camera can do before starting anything; one bad camera never stops the others.
        var plans: [CameraPlan] = []
        var outputs: [String: StatusDisplay.Outputs] = [:]
        var failures: [String] = []
        for device in devices {
            do {
                _ = try device.resolve(format, frameRate: options.framesPerSecond)
                let movie = try SegmentedMovieOutput(.init(
                    storageRoot: root, segmentSeconds: options.segmentSeconds, encoding: options.encoding))
                let timelapse = try TimelapseOutput(.init(storageRoot: root, intervalSeconds: options.timelapseIntervalSeconds))
                plans.append(CameraPlan(
                    cameraID: device.id, format: format, frameRate: options.framesPerSecond,
                    outputs: [(movie, ConnectionSettings()), (timelapse, ConnectionSettings())]))
                outputs[device.id] = .init(movie: movie, timelapse: timelapse)
            } catch {
                failures.append("\(error)")
            }
        }
        guard !plans.isEmpty else {
            throw CaptureError.invalidSetting(Array(Set(failures)).sorted().joined(separator: "\n"))
        }
        for failure in failures { logger.error("not started: \(failure)") }

        let kind = options.devices.isEmpty ? "synthetic camera(s)" : "camera(s)"
        let formatName = options.pixelFormat.map(\.rawValue) ?? "MJPEG-first"
        let what = options.encoding == .streamCopy ? "stream copy (MJPEG in MKV)" : "H.264"
        Console.line("Recording \(plans.count) \(kind) at \(options.width)x\(options.height) \(formatName) \(DeviceFormat.rate(options.framesPerSecond)) fps into \(root)")
        for device in devices where !options.devices.isEmpty {
            Console.line("  \(device.id): \(device.name) on \(device.details.node ?? "?")")
        }
        Console.line("  \(options.segmentSeconds) s \(what) segments, a still every \(options.timelapseIntervalSeconds) s. "
            + (options.durationSeconds.map { "Stopping after \(DeviceFormat.rate($0)) s; " } ?? "") + "Ctrl-C to stop.")
        if options.chaos { Console.line("  Chaos: cameras will be unplugged and wedged now and then; watch them come back.") }

        let events = RecorderEvents()
        let storage = try StorageKeeper.open(root: root, policy: RetentionPolicy(), events: events)
        Console.line("  Recordings index \(root)/\(StorageLayout.indexFileName): \(storage.recovery)")
        storage.start()
        let supervisor = Supervisor(
            plans: plans, source: source, events: events, watchdogSeconds: options.watchdogSeconds)
        let eventStream = events.stream()
        let hooks = options.hooks
        let eventTask = Task.detached { [logger] in
            for await event in eventStream {
                Self.log(event, logger)
                hooks?.run(event)
            }
        }
        let supervision = Task.detached { await supervisor.run() }
        let chaos = options.chaos ? synthetic.map { Self.startChaos($0, watchdogSeconds: options.watchdogSeconds) } : nil

        let display = StatusDisplay(outputs: outputs, root: root)
        let deadline = options.durationSeconds.map { SystemClocks.monotonicNanos() + Int64($0 * 1e9) }
        var polls = 0
        while !stopSignal.isRaised {
            if let deadline, SystemClocks.monotonicNanos() >= deadline { break }
            if polls % 4 == 0 { display.tick(await supervisor.status()) }
            polls += 1
            try? await Task.sleep(nanoseconds: 250_000_000)
        }
        chaos?.cancel()
        if let synthetic { for c in synthetic.cameras { c.faults.wedge(false) } }
        display.tick(await supervisor.status())
        Console.line("Stopping: finalizing open segments…")
        await RecorderShutdown(
            supervision: supervision, storage: storage, events: events, eventHandling: eventTask, hooks: { hooks }
        ).run()
        for s in await supervisor.status() {
            let o = outputs[s.cameraID]
            let drops = (o?.movie?.droppedFrameCount ?? 0) + (o?.timelapse?.droppedFrameCount ?? 0)
            Console.line("\(s.cameraID): \(s.frames) frames, \(drops) dropped, \(o?.timelapse?.skippedShotCount ?? 0) stills skipped")
        }
        Console.line("Recordings are in \(root). Play one with: ffplay FILE (or mpv/vlc)")
    }

    /// Unplugs a random synthetic camera for 2–5 s every few seconds, and now and then wedges
    /// one for longer than the watchdog allows, so recovery can be watched.
    static func startChaos(_ source: SyntheticDeviceSource, watchdogSeconds: Double) -> Task<Void, Never> {
        Task.detached {
            var round = 0
            while !Task.isCancelled {
                try? await Task.sleep(nanoseconds: UInt64.random(in: 4_000_000_000...8_000_000_000))
                if Task.isCancelled { break }
                let camera = source.cameras.randomElement()!
                round += 1
                if round % 3 == 0 {
                    camera.faults.wedge(true)
                    try? await Task.sleep(nanoseconds: UInt64((watchdogSeconds + 2) * 1e9))
                    camera.faults.wedge(false)
                } else {
                    camera.faults.unplug()
                    try? await Task.sleep(nanoseconds: UInt64.random(in: 2_000_000_000...5_000_000_000))
                    camera.faults.replug()
                }
            }
        }
    }

    static func log(_ event: RecorderEvent, _ logger: Logger) {
        switch event {
        case .error, .diskLow: logger.error("\(event)")
        case .cameraLost, .cameraFound: logger.notice("\(event)")
        case .framesDropped: logger.warning("\(event)")
        default: logger.info("\(event)")
        }
    }
}

