import Capture
import Foundation
import Logging
import Synchronization

/// `vigil run`: the daemon. Loads the configuration (or the built-in default: every camera,
/// continuously), opens one session per camera feeding all of that camera's jobs while any job
/// is scheduled, reloads on SIGHUP or when the file changes, takes snapshots on SIGUSR1, builds
/// daily timelapse videos, and talks to systemd. Stops cleanly (every file finalized) on
/// SIGINT/SIGTERM.
public final class RecorderService: @unchecked Sendable {
    public struct Options: Sendable {
        /// The configuration file (nil: the built-in default).
        public var configurationPath: String?
        /// Overrides the configuration's storage root.
        public var dataDirectory: String?
        public var durationSeconds: Double?
        /// Where USB cameras are found (default: the machine's V4L2 devices).
        public var deviceSource: (any DeviceSource)?
        public var notifier = SystemdNotifier()
        /// The time by which jobs due at a local time of day (`daily_video.at`) are started;
        /// a test moves it past that time instead of waiting for the night.
        public var clock: @Sendable () -> Date = { Date() }

        public init(configurationPath: String? = nil, dataDirectory: String? = nil, durationSeconds: Double? = nil) {
            self.configurationPath = configurationPath
            self.dataDirectory = dataDirectory
            self.durationSeconds = durationSeconds
        }
    }

    private let options: Options
    private let logger = Logger(label: "vigil.run")
    private let events = RecorderEvents()
    private let hooks = HookSlot()
    private var configuration: Configuration
    private var root: String
    private var jobs: [String: CameraJobs] = [:]
    private var configurationStamp: FileStamp?
    private let dailyVideos = DailyVideos()

    /// Loads and checks the configuration; throws before any camera is touched.
    public init(options: Options) throws {
        self.options = options
        if let path = options.configurationPath {
            do {
                configuration = try ConfigurationLoader.load(path: path)
            } catch {
                throw RecorderError.refused("\(error)\n\(path) has errors: nothing was started. Check it with `vigil check-config \(path)`.")
            }
            configurationStamp = FileStamp(path)
        } else {
            configuration = .builtInDefault()
        }
        root = URL(fileURLWithPath: options.dataDirectory ?? configuration.storageRoot).standardizedFileURL.path
        let configured = try Self.hooks(configuration)
        hooks.set(configured)
    }

    /// Records until `stop` is raised or the duration ends. `control` delivers SIGHUP (reload) and
    /// SIGUSR1 (snapshot).
    public func run(until stop: StopSignal, control: ProcessSignals) async throws {
        configuration.fileMode.apply()
        try StorageCheck.ensureWritable(root)
        let synthetic = syntheticSource()
        let source = MergedDeviceSource([options.deviceSource ?? V4L2DeviceSource()] + (synthetic.map { [$0] } ?? []))
        // A camera that is present must be able to do what the file asks, or nothing starts.
        let problems = configuration.problems(with: source.devices())
        guard problems.isEmpty else {
            let path = options.configurationPath ?? "the configuration"
            throw RecorderError.refused(problems.map(\.description).joined(separator: "\n")
                + "\nnothing was started: fix \(path) (`vigil check-config \(path)` shows the same)")
        }

        var plans: [CameraPlan] = []
        for camera in configuration.cameras + discoveredCameras(source.devices()) {
            if let job = makeJobs(camera, reusing: nil) { plans.append(job.plan) }
        }
        announce(synthetic: synthetic)

        let storage = try StorageKeeper.open(root: root, policy: configuration.retention, events: events)
        Console.line("  Recordings index \(root)/\(StorageLayout.indexFileName): \(storage.recovery)")
        if let days = storage.daysOfStorageLeft() {
            Console.line(String(format: "  At the recent rate this disk holds about %.1f days of recordings.", days))
        } else {
            Console.line("  How many days this disk holds is logged once there is a recording rate to go by (after ten minutes).")
        }
        storage.start()
        let supervisor = Supervisor(
            plans: plans, source: source, events: events, watchdogSeconds: configuration.watchdogSeconds)
        let eventTask = startEventHandling()
        let supervision = Task.detached { await supervisor.run() }
        let signals = control.stream()
        let pending = Mutex<[Int32]>([])
        let signalTask = Task.detached { for await number in signals { pending.withLock { $0.append(number) } } }

        options.notifier.ready(status: readyStatus)
        // Status lines for a person watching; under systemd the journal gets events instead.
        let display = isatty(STDOUT_FILENO) != 0 ? StatusDisplay(outputs: displayOutputs, root: root) : nil
        var lastDisplay: Int64 = 0
        let deadline = options.durationSeconds.map { SystemClocks.monotonicNanos() + Int64($0 * 1e9) }
        var lastWatchdog = SystemClocks.monotonicNanos()
        var lastRescan = lastWatchdog
        var lastFileCheck = lastWatchdog
        var lastDailyCheck: Int64?
        while !stop.isRaised {
            let now = SystemClocks.monotonicNanos()
            if let deadline, now >= deadline { break }
            for number in pending.withLock({ p -> [Int32] in defer { p.removeAll() }; return p }) {
                if number == SIGHUP { await reload(supervisor, storage: storage, reason: "SIGHUP") }
                if number == SIGUSR1 { await takeSnapshots() }
            }
            if now - lastFileCheck > 2_000_000_000 {
                lastFileCheck = now
                if let path = options.configurationPath, FileStamp(path) != configurationStamp {
                    await reload(supervisor, storage: storage, reason: "\(path) changed")
                }
            }
            if configuration.discoversAllCameras && now - lastRescan > 5_000_000_000 {
                lastRescan = now
                let devices = await onThread { source.devices() }
                for camera in discoveredCameras(devices) where jobs[camera.name] == nil {
                    if let job = makeJobs(camera, reusing: nil) {
                        Console.line("New camera \(camera.name): recording it")
                        await supervisor.add(job.plan)
                    }
                }
            }
            if lastDailyCheck.map({ now - $0 > 10_000_000_000 }) ?? true {
                lastDailyCheck = now
                let daily = jobs.values.compactMap { job in
                    job.camera.timelapse?.dailyVideo.map { DailyVideos.Job(camera: job.camera.name, video: $0) }
                }
                dailyVideos.tick(daily, root: root, timeZone: configuration.timeZone, storage: storage, now: options.clock())
            }
            if let display, now - lastDisplay >= 1_000_000_000 {
                lastDisplay = now
                display.tick(await supervisor.status())
            }
            if let interval = options.notifier.watchdogInterval, Double(now - lastWatchdog) / 1e9 >= interval {
                lastWatchdog = now
                options.notifier.watchdog()
            }
            try? await Task.sleep(nanoseconds: 250_000_000)
        }
        options.notifier.stopping()
        Console.line("Stopping: finalizing open segments…")
        signalTask.cancel()
        await RecorderShutdown(
            supervision: supervision, storage: storage, events: events, eventHandling: eventTask, hooks: { [hooks] in hooks.current }
        ).run()
        for s in await supervisor.status() {
            Console.line("\(s.cameraID): \(s.frames) frames")
        }
        Console.line("Recordings are in \(root).")
    }

    // MARK: - Cameras and jobs

    private var environment: CameraJobs.Environment {
        .init(storageRoot: root, timeZone: configuration.timeZone, location: configuration.location)
    }

    /// Builds a camera's outputs and plan; a camera that cannot be set up is reported and left out.
    private func makeJobs(_ camera: CameraConfig, reusing previous: CameraJobs?) -> CameraJobs? {
        if case .url(let url) = camera.match {
            logger.error("camera \(camera.name): network cameras (\(url)) are not supported yet; it is not recorded")
            return nil
        }
        do {
            let made = try CameraJobs(camera, environment: environment, reusing: previous)
            jobs[camera.name] = made
            return made
        } catch {
            logger.error("camera \(camera.name) not started: \(error)")
            events.emit(.error(camera: camera.name, message: "not started: \(error)"))
            return nil
        }
    }

    /// With the built-in default, every camera present is recorded under its own id.
    private func discoveredCameras(_ devices: [CaptureDevice]) -> [CameraConfig] {
        guard configuration.discoversAllCameras else { return [] }
        return devices.map { CameraConfig.discovered($0.id) }
    }

    /// Synthetic test cameras: those the configuration names (`synthetic-N`), or one when the
    /// built-in default finds no real camera, so a first run records something.
    private func syntheticSource() -> SyntheticDeviceSource? {
        let named = configuration.cameras.compactMap { camera -> Int? in
            guard case .id(let id) = camera.match, id.hasPrefix("synthetic-") else { return nil }
            return Int(id.dropFirst("synthetic-".count))
        }
        if let highest = named.max() { return SyntheticDeviceSource(count: highest + 1) }
        if configuration.discoversAllCameras && (options.deviceSource ?? V4L2DeviceSource()).devices().isEmpty {
            return SyntheticDeviceSource(count: 1)
        }
        return nil
    }

    private func announce(synthetic: SyntheticDeviceSource?) {
        if let path = options.configurationPath {
            Console.line("Configuration \(path): \(configuration.cameras.count) camera(s). Recording into \(root)")
        } else {
            Console.line("No configuration file: recording every camera continuously in 60 s segments, plus a still every 60 s, into \(root)")
            if synthetic != nil {
                Console.line("  No camera found: recording the synthetic test camera instead. Plug a camera in, or see `vigil run --help` for a configuration file.")
            }
        }
        for (name, job) in jobs.sorted(by: { $0.key < $1.key }) {
            var what: [String] = []
            if let r = job.camera.record {
                what.append("record \(r.segmentSeconds) s segments" + (r.schedule.isEmpty ? "" : " (\(r.schedule.joined(separator: ", ")))"))
            }
            if let t = job.camera.timelapse {
                what.append("a still every \(t.intervalSeconds) s" + (t.schedule.isEmpty ? "" : " (\(t.schedule.joined(separator: ", ")))"))
            }
            if job.camera.snapshot != nil { what.append("snapshots on SIGUSR1") }
            Console.line("  \(name): \(what.isEmpty ? "no jobs" : what.joined(separator: "; "))")
        }
        Console.line("  SIGHUP reloads the configuration; SIGINT/SIGTERM stop (open files are finalized).")
    }

    private var displayOutputs: [String: StatusDisplay.Outputs] {
        jobs.mapValues { StatusDisplay.Outputs(movie: $0.movie, timelapse: $0.timelapse) }
    }

    private var readyStatus: String { "recording \(jobs.count) camera(s) into \(root)" }

    // MARK: - Reload

    /// Re-reads the configuration. An invalid file is refused and the running one stays;
    /// unchanged cameras are not touched, changed ones are reconfigured, removed ones stopped.
    private func reload(_ supervisor: Supervisor, storage: StorageKeeper, reason: String) async {
        guard let path = options.configurationPath else {
            logger.notice("reload requested, but vigil runs without a configuration file: nothing to reload")
            return
        }
        configurationStamp = FileStamp(path)
        options.notifier.reloading()
        defer { options.notifier.ready(status: readyStatus) }
        let new: Configuration
        do {
            new = try ConfigurationLoader.load(path: path)
            _ = try Self.hooks(new)
        } catch {
            logger.error("reload (\(reason)) refused, the previous configuration keeps running:\n\(error)")
            Console.line("Reload refused: \(path) has errors; the previous configuration keeps running. Check it with `vigil check-config \(path)`.")
            return
        }
        if URL(fileURLWithPath: new.storageRoot).standardizedFileURL.path != root && options.dataDirectory == nil {
            logger.warning("the storage root changed to \(new.storageRoot): that takes a restart; still recording into \(root)")
        }
        configuration = new
        new.fileMode.apply()
        storage.update(new.retention)
        hooks.set(try? Self.hooks(new))
        var changed: [String] = [], added: [String] = [], removed: [String] = []
        let names = Set(new.cameras.map(\.name))
        for name in jobs.keys where !names.contains(name) && !new.discoversAllCameras {
            jobs[name] = nil
            await supervisor.remove(cameraID: name)
            removed.append(name)
        }
        for camera in new.cameras {
            guard let old = jobs[camera.name] else {
                if let job = makeJobs(camera, reusing: nil) {
                    await supervisor.add(job.plan)
                    added.append(camera.name)
                }
                continue
            }
            guard let next = try? CameraJobs(camera, environment: environment, reusing: old), next.differs(from: old) else { continue }
            do {
                try await supervisor.reconfigure(next.plan)
                jobs[camera.name] = next
                changed.append(camera.name)
            } catch {
                logger.error("camera \(camera.name): the new settings were refused (\(error)); it keeps its previous configuration")
            }
        }
        let summary = "reloaded \(path) (\(reason)): \(changed.count) changed, \(added.count) added, \(removed.count) removed, "
            + "\(jobs.count - changed.count - added.count) unchanged"
        logger.notice("\(summary)")
        Console.line(summary.prefix(1).uppercased() + summary.dropFirst())
    }

    // MARK: - Snapshots

    /// SIGUSR1: every camera with a snapshot job saves a still now.
    private func takeSnapshots() async {
        let cameras = jobs.values.filter { $0.photo != nil }
        guard !cameras.isEmpty else {
            logger.notice("snapshot requested, but no camera has a [[snapshot]] job")
            return
        }
        for job in cameras {
            do {
                let photo = try await job.photo!.capturePhoto()
                let path = try StorageLayout(root: root).snapshot(camera: job.camera.name, at: photo.wallNanos)
                try photo.data.withUnsafeBytes { try DurableFile.write($0, to: path) }
                Console.line("Snapshot \(job.camera.name): \(path)")
                events.emit(.stillSaved(camera: job.camera.name, path: path, shotWallNanos: nil))
            } catch {
                logger.error("camera \(job.camera.name): snapshot failed: \(error)")
            }
        }
    }

    // MARK: - Events

    private static func hooks(_ configuration: Configuration) throws -> EventHooks? {
        guard !configuration.hooks.isEmpty else { return nil }
        return try EventHooks(
            definitions: configuration.hooks.map { "\($0.event)=\($0.command)" }, timeoutSeconds: configuration.hookTimeoutSeconds)
    }

    private func startEventHandling() -> Task<Void, Never> {
        let stream = events.stream()
        return Task.detached { [logger, hooks] in
            for await event in stream {
                DemoRecorder.log(event, logger)
                hooks.current?.run(event)
            }
        }
    }
}

/// A file's modification time and size, to notice that it changed.
struct FileStamp: Equatable {
    let modified: Int
    let modifiedNanos: Int
    let size: Int64

    init?(_ path: String) {
        var st = stat()
        guard stat(path, &st) == 0 else { return nil }
        modified = st.st_mtim.tv_sec
        modifiedNanos = st.st_mtim.tv_nsec
        size = Int64(st.st_size)
    }
}

/// The event hooks in force; replaced on reload while events are being handled.
final class HookSlot: Sendable {
    private let hooks = Mutex<EventHooks?>(nil)
    func set(_ new: EventHooks?) { hooks.withLock { $0 = new } }
    var current: EventHooks? { hooks.withLock { $0 } }
}
