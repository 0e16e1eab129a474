import Capture
import Foundation
import Logging
import Plumbing
import ServiceLifecycle
import UnixSignals

/// The recorder's configuration in force and what follows from it: the cameras' jobs, the
/// hooks, the retention policy. As a service it reacts to SIGHUP and to the file being saved
/// (reload), to SIGUSR1 (snapshots), and, under the built-in default, to cameras plugged in
/// (recorded at once). An actor: one reload or snapshot at a time.
actor RecorderControl: Service {
    let logger = Logger(label: "vigil.run")
    private(set) var configuration: Configuration
    let root: String
    private let configurationPath: String?
    /// The storage root was given on the command line: the file's root does not apply.
    private let rootIsFixed: Bool
    private var configurationStamp: FileStamp?
    private(set) var jobs: [String: CameraJobs] = [:] {
        didSet { liveFeeds.replace(with: jobs.mapValues(\.live)) }
    }
    /// The cameras' live views, as `jobs` has them.
    let liveFeeds: LiveFeeds
    let events: RecorderEvents
    let hooks = HookSlot()
    private let notifier: SystemdNotifier
    private let source: any DeviceSource
    /// The configured network cameras, which a reload replaces.
    private let network: NetworkDeviceSource
    /// The synthetic test cameras, which a reload naming a new `synthetic-N` grows.
    private let synthetic: SyntheticDeviceSource
    private var supervisor: Supervisor?
    private var storage: StorageKeeper?
    /// What the control plane listens to while it runs.
    private var signals: UnixSignalsSequence?
    private var deviceChanges: AsyncStream<DeviceChange>?
    /// In a cluster: the network cameras this node holds the lease of, and so records, each with
    /// its lease's fence.
    private var leased: [String: CaptureFence] = [:]
    /// Changes to the jobs and the supervisor's plans (reloads, leases, cameras plugged in) are
    /// made one at a time, each finished before the next begins (see `AsyncTurn`).
    private let changes = AsyncTurn()
    /// The reasons of the reload waiting for its turn: requests that come while it waits (the
    /// watcher and SIGHUP for one save) join it and are one reload.
    private var waitingReload: [String] = []
    /// Counts of the outputs that a reload or a removal retired, by camera.
    private var retired: [String: OutputTally] = [:]
    /// Each camera's timeline, kept for the whole run (a camera removed and added again keeps
    /// its own) and set at start from the index.
    private var timelines: [String: CameraTimeline] = [:]

    init(
        configuration: Configuration, root: String, configurationPath: String?, rootIsFixed: Bool, events: RecorderEvents,
        notifier: SystemdNotifier, source: any DeviceSource, synthetic: SyntheticDeviceSource, network: NetworkDeviceSource,
        liveFeeds: LiveFeeds
    ) throws {
        self.liveFeeds = liveFeeds
        self.configuration = configuration
        self.root = root
        self.configurationPath = configurationPath
        self.rootIsFixed = rootIsFixed
        configurationStamp = configurationPath.flatMap(FileStamp.init)
        self.events = events
        self.notifier = notifier
        self.source = source
        self.network = network
        self.synthetic = synthetic
        hooks.set(try Self.hooks(configuration))
    }

    /// The plans of the cameras in the configuration, plus (built-in default) every camera present.
    func plans(present: [CaptureDevice]) -> [CameraPlan] {
        (Self.recordedHere(configuration, leased: Set(leased.keys)) + discoveredCameras(present)).compactMap { makeJobs($0, reusing: nil)?.plans }.flatMap { $0 }
    }

    /// The configured cameras this machine records. In a cluster, a camera pinned to another
    /// node (`node = "…"`, a USB camera plugged into that one) is left to it, and a network
    /// camera pinned to none is recorded by the node that holds its lease.
    static func recordedHere(_ configuration: Configuration, leased: Set<String>) -> [CameraConfig] {
        guard configuration.cluster != nil else { return configuration.cameras }
        return configuration.cameras.filter { camera in
            leasable(camera, configuration) ? leased.contains(camera.name) : camera.clusterNode.map { $0 == configuration.cluster?.node } ?? true
        }
    }

    /// A network camera that no node is pinned to: the cluster's nodes share it by lease.
    static func leasable(_ camera: CameraConfig, _ configuration: Configuration) -> Bool {
        guard configuration.cluster != nil, camera.clusterNode == nil, case .url = camera.match else { return false }
        return true
    }

    // MARK: - Leases (a cluster's network cameras)

    /// The network cameras of the configuration that nodes share by lease.
    var leasableCameras: [String] {
        configuration.cameras.filter { Self.leasable($0, configuration) }.map(\.name)
    }

    /// Starts recording a network camera whose lease this node now holds; false when the
    /// configuration no longer shares it.
    func hold(_ name: String) async -> Bool {
        await changes.run { await holdInTurn(name) }
    }

    private func holdInTurn(_ name: String) async -> Bool {
        guard let camera = configuration.cameras.first(where: { $0.name == name }), Self.leasable(camera, configuration),
              let supervisor else { return false }
        // A lease taken anew (or renewed while fenced) lets frames through.
        if let fence = leased[name] { fence.open() } else { leased[name] = CaptureFence() }
        guard jobs[name] == nil else { return true }
        if let job = makeJobs(camera, reusing: nil) {
            for plan in job.plans { await supervisor.add(plan) }
        }
        return true
    }

    /// Stops recording a network camera whose lease this node lost or gave up: its open files
    /// are finalized before this returns.
    func release(_ name: String) async {
        await changes.run {
            guard leased.removeValue(forKey: name) != nil else { return }
            await remove(name)
        }
    }

    /// Stops a camera's session and its detection stream (files finalized) and forgets its jobs.
    private func remove(_ name: String) async {
        await supervisor?.remove(cameraID: name)
        await supervisor?.remove(cameraID: CameraJobs.detectionID(name))
        if let job = jobs.removeValue(forKey: name) { retire(job, replacedBy: nil) }
    }

    /// Keeps the counts of the outputs of `job` that `next` does not carry over: finished by
    /// now, they count no more frames.
    private func retire(_ job: CameraJobs, replacedBy next: CameraJobs?) {
        let movie = job.movie.flatMap { $0 === next?.movie ? nil : $0 }
        let timelapse = job.timelapse.flatMap { $0 === next?.timelapse ? nil : $0 }
        guard movie != nil || timelapse != nil else { return }
        var tally = OutputTally(movie: movie, timelapse: timelapse)
        tally.segmentPath = nil
        retired[job.camera.name] = (retired[job.camera.name] ?? OutputTally()).adding(tally)
    }

    /// Each camera's outputs now, with their counts over every output it had since the start.
    func tallies() -> [String: OutputTally] {
        var all = retired
        for (name, job) in jobs {
            all[name] = OutputTally(movie: job.movie, timelapse: job.timelapse).adding(retired[name] ?? OutputTally())
        }
        return all
    }

    /// The fence of a camera this node records under a lease (nil: it records no such camera).
    func fence(of name: String) -> CaptureFence? { leased[name] }

    /// The frames a held camera's recording wrote into files (nil: not recorded here).
    func writtenFrames(of name: String) async -> Int? { await supervisor?.writtenFrames(of: name) }

    /// The camera's timeline, made the first time it is asked for.
    private func timeline(of camera: String) -> CameraTimeline {
        if let timeline = timelines[camera] { return timeline }
        let made = CameraTimeline()
        timelines[camera] = made
        return made
    }

    /// Sets each camera's timeline to its newest recording in the index, so that a camera whose
    /// times run ahead of their arrival (a network camera) does not start before it after a
    /// restart (see `CameraTimeline`).
    func seedTimelines(from index: RecordingIndex) async {
        let names = jobs.keys.sorted()
        let ends = await RecorderService.controlIO.run { names.map { try? index.newestEnd(camera: $0) } }
        for (name, end) in zip(names, ends) {
            if let end = end ?? nil { timeline(of: name).recorded(until: end) }
        }
    }

    func attach(supervisor: Supervisor, storage: StorageKeeper, signals: UnixSignalsSequence?, deviceChanges: AsyncStream<DeviceChange>) {
        self.supervisor = supervisor
        self.storage = storage
        self.signals = signals
        self.deviceChanges = deviceChanges
    }

    func run() async {
        let fileChanges = configurationPath.map { FileWatcher.changes(of: $0, logger: logger) }
        await withDiscardingTaskGroup { group in
            if let signals {
                group.addTask {
                    for await signal in signals.cancelOnGracefulShutdown() {
                        if signal == .sighup { await self.requestReload(reason: "SIGHUP") }
                        if signal == .sigusr1 { await self.takeSnapshots() }
                    }
                }
            }
            if let fileChanges, let path = configurationPath {
                group.addTask {
                    for await _ in fileChanges.cancelOnGracefulShutdown() where await self.fileChanged() {
                        await self.requestReload(reason: "\(path) changed")
                    }
                }
            }
            if configuration.discoversAllCameras, let deviceChanges {
                group.addTask {
                    for await change in deviceChanges.cancelOnGracefulShutdown() {
                        if case .connected = change { await self.recordNewCameras() }
                    }
                }
            }
            // Stays until the group shuts it down, even with nothing to listen to.
            group.addTask { try? await gracefulShutdown() }
        }
    }

    private func fileChanged() async -> Bool {
        await RecorderService.controlIO.run { [configurationPath] in configurationPath.flatMap(FileStamp.init) } != configurationStamp
    }

    // MARK: - Cameras and jobs

    private var environment: CameraJobs.Environment {
        .init(storageRoot: root, timeZone: configuration.timeZone, location: configuration.location)
    }

    /// Builds a camera's outputs and plan; a camera that cannot be set up is reported and left out.
    private func makeJobs(_ camera: CameraConfig, reusing previous: CameraJobs?) -> CameraJobs? {
        do {
            let made = try CameraJobs(camera, environment: environment, reusing: previous, fence: leased[camera.name], timeline: timeline(of: camera.name))
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

    /// A camera was plugged in: under the built-in default, one not seen before is recorded.
    private func recordNewCameras() async {
        await changes.run { await recordNewCamerasInTurn() }
    }

    private func recordNewCamerasInTurn() async {
        let devices = await RecorderService.controlIO.run { [source] in source.devices() }
        for camera in discoveredCameras(devices) where jobs[camera.name] == nil {
            if let job = makeJobs(camera, reusing: nil) {
                Console.line("New camera \(camera.name): recording it")
                await supervisor?.add(job.plan)
            }
        }
    }

    var readyStatus: String { "recording \(jobs.count) camera(s) into \(root)" }

    var dailyVideoPlan: DailyVideos.Plan {
        let daily = jobs.values.compactMap { job in
            job.camera.timelapse?.dailyVideo.map { DailyVideos.Job(camera: job.camera.name, video: $0) }
        }
        return .init(jobs: daily, root: root, timeZone: configuration.timeZone)
    }

    // MARK: - Reload

    /// Reloads in the control plane's turn. A request that comes while another waits for its
    /// turn joins it; one that comes while a reload runs waits and reloads again after it, so a
    /// save made during a reload is not missed.
    private func requestReload(reason: String) async {
        waitingReload.append(reason)
        guard waitingReload.count == 1 else { return }
        await changes.run {
            let reasons = waitingReload
            waitingReload = []
            await reload(reason: reasons.joined(separator: " and "))
        }
    }

    /// Re-reads the configuration. An invalid file is refused and the running one stays;
    /// unchanged cameras are not touched, changed ones are reconfigured, removed ones stopped.
    private func reload(reason: String) async {
        guard let path = configurationPath, let supervisor, let storage else {
            logger.notice("reload requested, but vigil runs without a configuration file: nothing to reload")
            return
        }
        configurationStamp = await RecorderService.controlIO.run { FileStamp(path) }
        notifier.reloading()
        defer { notifier.ready(status: readyStatus) }
        let new: Configuration
        do {
            new = try await RecorderService.controlIO.run { try ConfigurationLoader.load(path: path) }
            _ = try Self.hooks(new)
        } catch {
            logger.error("reload (\(reason)) refused, the previous configuration keeps running:\n\(error)")
            Console.line("Reload refused: \(path) has errors; the previous configuration keeps running. Check it with `vigil check-config \(path)`.")
            return
        }
        warnAboutRestartOnlySettings(new)
        configuration = new
        // Before cameras are added or changed: a new or re-addressed camera is then present.
        network.update(cameras: RecorderService.networkCameras(new))
        synthetic.grow(to: RecorderService.syntheticCount(new))
        new.fileMode.apply()
        storage.update(new.retention)
        do {
            hooks.set(try Self.hooks(new))
        } catch {
            // check-config found none, so this is rare (a command that vanished meanwhile).
            logger.error("the hooks of \(path) cannot be set up (\(error)); no hook runs until the next reload")
            hooks.set(nil)
        }
        let outcome = await applyCameras(of: new, supervisor: supervisor)
        let summary = "reloaded \(path) (\(reason)): \(outcome.changed.count) changed, \(outcome.added.count) added, \(outcome.removed.count) removed, "
            + (outcome.refused.isEmpty ? "" : "\(outcome.refused.count) kept on their previous settings (\(outcome.refused.joined(separator: ", ")): see the log), ")
            + "\(jobs.count - outcome.changed.count - outcome.added.count - outcome.refused.count) unchanged"
        logger.notice("\(summary)")
        Console.line(summary.prefix(1).uppercased() + summary.dropFirst())
    }

    private func warnAboutRestartOnlySettings(_ new: Configuration) {
        if URL(fileURLWithPath: new.storageRoot).standardizedFileURL.path != root && !rootIsFixed {
            logger.warning("the storage root changed to \(new.storageRoot): that takes a restart; still recording into \(root)")
        }
        if new.archive != configuration.archive {
            logger.warning("[archive] changed: it is read at start, so that takes a restart; uploads go on with the previous settings")
        }
        if new.cluster != configuration.cluster {
            logger.warning("[cluster] changed: it is read at start, so that takes a restart; this node goes on with the previous settings")
        }
    }

    /// The cameras a reload touched, by what happened to them.
    private struct ReloadOutcome {
        var changed: [String] = [], added: [String] = [], removed: [String] = [], refused: [String] = []
    }

    /// Removes, adds and reconfigures cameras to match `new`; a camera whose jobs did not change
    /// is not touched (no cut).
    private func applyCameras(of new: Configuration, supervisor: Supervisor) async -> ReloadOutcome {
        var outcome = ReloadOutcome()
        let cameras = Self.recordedHere(new, leased: Set(leased.keys))
        let names = Set(cameras.map(\.name))
        for name in jobs.keys.sorted() where !names.contains(name) && !new.discoversAllCameras {
            await remove(name)
            outcome.removed.append(name)
        }
        for camera in cameras {
            guard let old = jobs[camera.name] else {
                if let job = makeJobs(camera, reusing: nil) {
                    for plan in job.plans { await supervisor.add(plan) }
                    outcome.added.append(camera.name)
                }
                continue
            }
            let next: CameraJobs
            do {
                next = try CameraJobs(camera, environment: environment, reusing: old, fence: leased[camera.name], timeline: timeline(of: camera.name))
            } catch {
                logger.error("camera \(camera.name): the new settings cannot be used (\(error)); it keeps its previous configuration")
                outcome.refused.append(camera.name)
                continue
            }
            guard next.differs(from: old) else { continue }
            do {
                // The motion output moves between the detection stream and the camera's own
                // session: it leaves one before it joins the other.
                if next.detectionPlan == nil { await supervisor.remove(cameraID: CameraJobs.detectionID(camera.name)) }
                try await supervisor.reconfigure(next.plan)
                if let detection = next.detectionPlan { try await supervisor.reconfigure(detection) }
                retire(old, replacedBy: next)
                jobs[camera.name] = next
                outcome.changed.append(camera.name)
            } catch {
                logger.error("camera \(camera.name): the new settings were refused (\(error)); it keeps its previous configuration")
                outcome.refused.append(camera.name)
            }
        }
        return outcome
    }

    static func hooks(_ configuration: Configuration) throws -> EventHooks? {
        guard !configuration.hooks.isEmpty else { return nil }
        return try EventHooks(
            definitions: configuration.hooks.map { "\($0.event)=\($0.command)" }, timeoutSeconds: configuration.hookTimeoutSeconds)
    }
}
