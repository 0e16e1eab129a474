import Capture
import Foundation
import Logging
import Plumbing
import ServiceLifecycle
import Synchronization
import UnixSignals

/// `vigil run` and `vigil demo`: the recorder, one tree of services in a `ServiceGroup`.
///
/// Loads the configuration (a file, the built-in default, or one `vigil demo` made from its
/// flags), checks it against the cameras present, opens the storage, and runs:
///
/// | service | does |
/// |---|---|
/// | `CatalogReplicator` | `[cluster]`: this node's recordings into the shared catalogue |
/// | `EventService` | logs every event, runs the hooks |
/// | `StorageService` | indexes every file, retention, the free-space floor |
/// | `DailyVideos` | the nightly timelapse videos |
/// | `Supervisor` | one session per camera: reattach, retries, watchdog, schedules |
/// | `DeviceMonitorService` | plug events, for the supervisor and camera discovery |
/// | `RecorderControl` | SIGHUP and file saves (reload), SIGUSR1 (snapshots), new cameras, cluster leases; one change at a time |
/// | `StatusService` | the status lines (not under systemd) |
/// | `NotifierService` | systemd: ready, watchdog, stopping |
/// | `ChaosService` | `vigil demo --chaos` |
/// | `DeadlineService` | `--duration` |
///
/// | extra services | `Options.extraServices`: the archive (after `EventService`), the web server (last), added by `vigil` |
///
/// More services are more entries in that list.
///
/// Signals are trapped first, before recovery: SIGHUP or SIGUSR1 during start-up is acted on
/// once start-up is done. SIGINT/SIGTERM (through `stop()`, also during start-up), or the end of
/// `--duration`, shut the group down gracefully, in the reverse of that order, each service once
/// the one after it has returned: systemd is told,
/// every camera stops at once (each finalizing its open segment), the index takes what they
/// announced, the archive uploads what is queued (for at most `[archive] drain_seconds`), then
/// the last events are logged and their hooks run and are awaited. Nothing depends on timing.
public final class RecorderService: Sendable {
    public struct Options: Sendable {
        /// The configuration file (nil: the built-in default, or `configuration`).
        public var configurationPath: String?
        /// A configuration made by the caller instead of a file (`vigil demo`).
        public var configuration: Configuration?
        /// Overrides the configuration's storage root.
        public var dataDirectory: String?
        /// Where the web server listens instead of `[http] listen` (`vigil run --listen`: several
        /// nodes of a cluster on one machine, one configuration file).
        public var listen: String?
        public var durationSeconds: Double?
        /// Where USB cameras are found (default: the machine's V4L2 devices).
        public var deviceSource: (any DeviceSource)?
        public var notifier = SystemdNotifier()
        /// The time by which jobs due at a local time of day (`daily_video.at`) are started;
        /// a test moves it past that time instead of waiting for the night.
        public var clock: @Sendable () -> Date = { Date() }
        /// SIGINT/SIGTERM stop, SIGHUP reloads, SIGUSR1 takes snapshots (the command line).
        /// Off: `stop()` ends the run (tests).
        public var handlesSignals = false
        /// What is said at start instead of the configuration's summary (`vigil demo`).
        public var introduction: [String]?
        /// Unplug and wedge the synthetic cameras now and then (`vigil demo --chaos`).
        public var chaos = false
        /// Services beyond the recorder's own, made from what it opened (`vigil` adds the web
        /// server and the archive here, so the recorder depends on neither). One that fails must
        /// log and wait for shutdown rather than throw, or it ends the group.
        public var extraServices: @Sendable (Opened) async -> ExtraServices = { _ in ExtraServices() }
        /// Connects to the cluster's shared catalogue (`[cluster]`; `vigil` sets it, so the
        /// recorder does not depend on PostgreSQL). With it, this node's index keeps a journal
        /// and `CatalogReplicator` copies every recording into the catalogue.
        public var openSharedCatalog: (@Sendable (ClusterSettings) throws -> any RecordingCatalog)?

        public init(configurationPath: String? = nil, dataDirectory: String? = nil, durationSeconds: Double? = nil) {
            self.configurationPath = configurationPath
            self.dataDirectory = dataDirectory
            self.durationSeconds = durationSeconds
        }
    }

    /// `Options.extraServices`, by when each must stop.
    public struct ExtraServices: Sendable {
        /// Started last, stopped first, before any camera stops (the web server, the cluster's heartbeat).
        public var stoppingFirst: [any Service]
        /// Stopped once the storage keeper has indexed the cameras' last files, before the
        /// event service: the archive, which uploads those files before the process ends.
        public var stoppingAfterStorage: [any Service]

        public init(stoppingFirst: [any Service] = [], stoppingAfterStorage: [any Service] = []) {
            self.stoppingFirst = stoppingFirst
            self.stoppingAfterStorage = stoppingAfterStorage
        }
    }

    /// What the recorder opened, for `Options.extraServices`.
    public struct Opened: Sendable {
        /// As loaded at start (a reload changes cameras and jobs, not this).
        public let configuration: Configuration
        /// The storage root (`--data-dir` or the configuration's).
        public let root: String
        public let supervisor: Supervisor
        public let index: RecordingIndex
        public let events: RecorderEvents
        /// Every camera's live view, kept in step with reloads.
        public let liveFeeds: LiveFeeds
        /// The storage root's keeper (the archive queues files through it); nil in tests of the web alone.
        public let storage: StorageKeeper?
        /// The cameras a cluster shares by lease; nil in tests of the web alone.
        public let leases: CameraLeases?

        public init(
            configuration: Configuration, root: String, supervisor: Supervisor, index: RecordingIndex, events: RecorderEvents,
            liveFeeds: LiveFeeds = LiveFeeds(), storage: StorageKeeper? = nil, leases: CameraLeases? = nil
        ) {
            self.leases = leases
            self.liveFeeds = liveFeeds
            self.storage = storage
            self.configuration = configuration
            self.root = root
            self.supervisor = supervisor
            self.index = index
            self.events = events
        }
    }

    /// Blocking work of the control plane: enumerating devices, loading the configuration,
    /// writing snapshots.
    static let controlIO = BlockingIO("vigil.control")

    private let options: Options
    private let configuration: Configuration
    /// Every camera's live view (for the web server), filled in when `run()` plans the cameras.
    private let liveFeeds = LiveFeeds()
    private let root: String
    private let logger = Logger(label: "vigil.run")
    /// The running group, for `stop()`; `stopped` covers a stop before it runs.
    private let group = Mutex<(group: ServiceGroup?, stopped: Bool)>((nil, false))

    /// Loads and checks the configuration; throws before any camera is touched.
    public init(options: Options) throws {
        self.options = options
        var configuration: Configuration
        if let path = options.configurationPath {
            do {
                configuration = try ConfigurationLoader.load(path: path)
            } catch {
                throw RecorderError.refused("\(error)\n\(path) has errors: nothing was started. Check it with `vigil check-config \(path)`.")
            }
        } else {
            configuration = options.configuration ?? .builtInDefault()
        }
        if let listen = options.listen {
            guard listen.isEmpty || HTTPSettings.parse(listen) != nil else {
                throw RecorderError.refused("--listen \(listen) is not HOST:PORT (e.g. 127.0.0.1:8081), nor \"\" for no web server")
            }
            if configuration.http.token == nil, let problem = HTTPSettings.problemWithoutToken(listen: listen) {
                throw RecorderError.refused("--listen: \(problem)")
            }
            configuration.http.listen = listen
        }
        self.configuration = configuration
        root = URL(fileURLWithPath: options.dataDirectory ?? configuration.storageRoot).standardizedFileURL.path
        _ = try RecorderControl.hooks(configuration)
    }

    /// Shuts the recorder down gracefully (as SIGTERM does); `run()` returns when it is done.
    public func stop() async {
        let running = group.withLock { g -> ServiceGroup? in
            g.stopped = true
            return g.group
        }
        await running?.triggerGracefulShutdown()
    }

    /// Records until stopped or the duration ends; throws only when nothing could start.
    public func run() async throws {
        // Every signal Vigil answers is trapped before anything else: SIGINT/SIGTERM during
        // start-up (a long recovery scan) stop the recorder as soon as its group runs, cleanly,
        // like one that comes later; SIGHUP and SIGUSR1 wait in their sequence until the control
        // service reads it once start-up is done (until then their default action would kill Vigil).
        let stopSignals = options.handlesSignals ? await UnixSignalsSequence(trapping: .sigterm, .sigint) : nil
        let signals = options.handlesSignals ? await UnixSignalsSequence(trapping: .sighup, .sigusr1) : nil
        let stopOnSignal = stopSignals.map { stopping in
            Task { [self] in for await _ in stopping { await stop() } }
        }
        defer { stopOnSignal?.cancel() }
        let io = Self.controlIO
        // Debian's default soft limit (1024) is small beside what cameras and web clients need;
        // the web server's share of the limit is computed from this (`OpenFileLimit`).
        OpenFileLimit.raiseToHard()
        configuration.fileMode.apply()
        try await io.run { [root] in try StorageCheck.ensureWritable(root) }
        let synthetic = await io.run { [self] in SyntheticDeviceSource(count: syntheticCount()) }
        let network = NetworkDeviceSource(cameras: Self.networkCameras(configuration))
        let source = MergedDeviceSource([options.deviceSource ?? V4L2DeviceSource(), synthetic, network])
        // Its subscription lists the device folder (the baseline of "from now on").
        let monitor = await io.run { DeviceMonitorService(source: source) }
        let present = await io.run { source.devices() }
        // A camera that is present must be able to do what the file asks, or nothing starts.
        let problems = configuration.problems(with: present)
        guard problems.isEmpty else {
            let path = options.configurationPath ?? "the configuration"
            throw RecorderError.refused(problems.map(\.description).joined(separator: "\n")
                + "\nnothing was started: fix \(path) (`vigil check-config \(path)` shows the same)")
        }
        let events = RecorderEvents()
        let control = try RecorderControl(
            configuration: configuration, root: root, configurationPath: options.configurationPath,
            rootIsFixed: options.dataDirectory != nil, events: events, notifier: options.notifier, source: source,
            synthetic: synthetic, network: network, liveFeeds: liveFeeds)
        let plans = await control.plans(present: present)
        await announce(control, synthetic: synthetic)

        let sharedCatalog: (@Sendable () throws -> any RecordingCatalog)? =
            if let cluster = configuration.cluster, let open = options.openSharedCatalog { { try open(cluster) } } else { nil }
        let storage = try await io.run { [root, configuration] in
            try StorageKeeper.open(root: root, policy: configuration.retention, events: events, catalogJournal: sharedCatalog != nil)
        }
        Console.line("  Recordings index \(root)/\(StorageLayout.indexFileName): \(storage.recovery)")
        if let days = await storage.io.run({ storage.daysOfStorageLeft() }) {
            Console.line(String(format: "  At the recent rate this disk holds about %.1f days of recordings.", days))
        } else {
            Console.line("  How many days this disk holds is logged once there is a recording rate to go by (after ten minutes).")
        }

        let supervisor = Supervisor(
            plans: plans, source: source, events: events, watchdogSeconds: configuration.watchdogSeconds,
            deviceChanges: monitor.changes())
        await control.attach(supervisor: supervisor, storage: storage, signals: signals, deviceChanges: monitor.changes())
        await control.seedTimelines(from: storage.index)
        let display = StatusDisplay(root: root)

        try await runGroup(of: await services(
            events: events, control: control, storage: storage, supervisor: supervisor, monitor: monitor,
            synthetic: synthetic, display: display, sharedCatalog: sharedCatalog))

        // Over every output a reload put in place, not those of the start alone.
        let tallies = await control.tallies()
        for s in await supervisor.status() {
            let o = tallies[s.cameraID]
            Console.line("\(s.cameraID): \(s.frames) frames" + (o?.hasMovie == true ? o!.recorded : "")
                + ", \(o?.dropped ?? 0) dropped, \(o?.stillsSkipped ?? 0) stills skipped")
        }
        Console.line("Recordings are in \(root). Play one with: ffplay FILE (or mpv/vlc)")
    }

    /// The recorder's services: started in this order, shut down in the reverse one (see above).
    private func services(
        events: RecorderEvents, control: RecorderControl, storage: StorageKeeper, supervisor: Supervisor,
        monitor: DeviceMonitorService, synthetic: SyntheticDeviceSource, display: StatusDisplay,
        sharedCatalog: (@Sendable () throws -> any RecordingCatalog)?
    ) async -> [ServiceGroupConfiguration.ServiceConfiguration] {
        var services: [ServiceGroupConfiguration.ServiceConfiguration] = []
        if let sharedCatalog {
            // First, so it stops last: after the storage service has indexed the final files.
            services.append(.init(service: CatalogReplicator(index: storage.index, open: sharedCatalog)))
        }
        let opened = Opened(configuration: configuration, root: root, supervisor: supervisor, index: storage.index, events: events, liveFeeds: liveFeeds, storage: storage,
                            leases: CameraLeases(control: control))
        let extra = await options.extraServices(opened)
        services.append(.init(service: EventService(events: events, hooks: control.hooks)))
        services += extra.stoppingAfterStorage.map { .init(service: $0) }
        services += [
            .init(service: StorageService(keeper: storage)),
            .init(service: DailyVideos(plan: { await control.dailyVideoPlan }, storage: storage, clock: options.clock)),
            .init(service: supervisor),
            .init(service: monitor),
            .init(service: control),
        ]
        if !LogDestination.current.isJournal {
            services.append(.init(service: StatusService(supervisor: supervisor, display: display, tallies: { await control.tallies() })))
        }
        services.append(.init(service: NotifierService(notifier: options.notifier, readyStatus: { await control.readyStatus })))
        if options.chaos, !synthetic.cameras.isEmpty {
            services.append(.init(service: ChaosService(source: synthetic, watchdogSeconds: configuration.watchdogSeconds)))
        }
        services += extra.stoppingFirst.map { .init(service: $0) }
        if let seconds = options.durationSeconds {
            services.append(.init(service: DeadlineService(seconds: seconds), successTerminationBehavior: .gracefullyShutdownGroup))
        }
        return services
    }

    /// Runs the services as one group until it ends; a `stop()` that came first ends it at once.
    private func runGroup(of services: [ServiceGroupConfiguration.ServiceConfiguration]) async throws {
        let group = ServiceGroup(configuration: .init(
            services: services, gracefulShutdownSignals: [], logger: Logger(label: "vigil.services")))
        let stopAtOnce = self.group.withLock { g -> Bool in
            g.group = group
            return g.stopped
        }
        // Remembered by the group and delivered as soon as it runs.
        if stopAtOnce { await group.triggerGracefulShutdown() }
        try await group.run()
    }

    /// The network cameras a configuration names (`url = "rtsp://…"`, and `detect_url`
    /// streams), each over its transport.
    static func networkCameras(_ configuration: Configuration) -> [(url: String, settings: NetworkCamera.Settings)] {
        configuration.cameras.flatMap { camera -> [(url: String, settings: NetworkCamera.Settings)] in
            guard case .url(let url) = camera.match else { return [] }
            let settings = NetworkCamera.Settings(transport: camera.transport)
            return [(url, settings)] + (camera.detectURL.map { [($0, settings)] } ?? [])
        }
    }

    /// How many synthetic test cameras a configuration needs: up to the highest `synthetic-N` it
    /// names (a reload grows the set to that too).
    static func syntheticCount(_ configuration: Configuration) -> Int {
        let named = configuration.cameras.compactMap { camera -> Int? in
            guard case .id(let id) = camera.match, id.hasPrefix("synthetic-") else { return nil }
            return Int(id.dropFirst("synthetic-".count))
        }
        return named.max().map { $0 + 1 } ?? 0
    }

    /// Synthetic cameras at start: those the configuration names, or one when the built-in
    /// default finds no real camera, so a first run records something.
    private func syntheticCount() -> Int {
        let named = Self.syntheticCount(configuration)
        if named == 0 && configuration.discoversAllCameras && (options.deviceSource ?? V4L2DeviceSource()).devices().isEmpty {
            return 1
        }
        return named
    }

    private func announce(_ control: RecorderControl, synthetic: SyntheticDeviceSource) async {
        if let introduction = options.introduction {
            introduction.forEach(Console.line)
            return
        }
        if let path = options.configurationPath {
            Console.line("Configuration \(path): \(configuration.cameras.count) camera(s). Recording into \(root)")
        } else {
            Console.line("No configuration file: recording every camera continuously in 60 s segments, plus a still every 60 s, into \(root)")
            if !synthetic.cameras.isEmpty {
                Console.line("  No camera found: recording the synthetic test camera instead. Plug a camera in, or see `vigil run --help` for a configuration file.")
            }
        }
        for (name, job) in await control.jobs.sorted(by: { $0.key < $1.key }) {
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
}
