import Capture
import Foundation
import Media

/// One configured camera turned into what the supervisor runs: the outputs for its jobs (one
/// session feeds them all) and its plan. Outputs whose job did not change are carried over from
/// the previous configuration, so a reload does not interrupt them.
struct CameraJobs {
    let camera: CameraConfig
    let environment: Environment
    let movie: SegmentedMovieOutput?
    let timelapse: TimelapseOutput?
    let photo: PhotoOutput?
    let motion: MotionOutput?
    /// Live view (snapshot, MJPEG, fMP4): every camera has one, carried over across reloads.
    let live: LiveOutput
    let plan: CameraPlan
    /// The camera's detection stream (`detect_url`), supervised apart: its motion output runs there.
    let detectionPlan: CameraPlan?

    /// The plans the supervisor runs for this camera.
    var plans: [CameraPlan] { [plan] + (detectionPlan.map { [$0] } ?? []) }

    /// The supervisor's name for a camera's detection stream (logs and its events say it).
    static func detectionID(_ camera: String) -> String { "\(camera) (detection)" }

    /// What every camera's jobs depend on besides their own settings.
    struct Environment: Equatable {
        var storageRoot: String
        var timeZone: TimeZone
        var location: GeoLocation?
    }

    /// `fence`: the cluster lease's fence when this node records the camera under a lease;
    /// `timeline`: the camera's timeline across sessions and runs (no frame placed before its last).
    init(
        _ camera: CameraConfig, environment: Environment, reusing previous: CameraJobs? = nil, fence: CaptureFence? = nil,
        timeline: CameraTimeline? = nil
    ) throws {
        self.camera = camera
        self.environment = environment
        let same = previous.map { $0.environment == environment } ?? false
        let connection = ConnectionSettings(rotation: camera.rotation, isMirrored: camera.mirrored)
        var outputs: [(CaptureOutput, ConnectionSettings)] = []
        var schedules: [Schedule] = []

        // Motion first: a recording of motion only follows its timeline.
        let reused = same ? previous : nil
        let motionJob = try Self.motionOutput(camera, environment, reusing: reused)
        motion = motionJob?.output
        let motionSchedule = motionJob?.schedule
        if case let (movie, schedule)? = try Self.movieOutput(camera, environment, motion: motion, reusing: reused) {
            self.movie = movie
            outputs.append((movie, connection))
            schedules.append(schedule)
        } else {
            movie = nil
        }
        if case let (timelapse, schedule)? = try Self.timelapseOutput(camera, environment, reusing: reused) {
            self.timelapse = timelapse
            outputs.append((timelapse, connection))
            schedules.append(schedule)
        } else {
            timelapse = nil
        }
        if camera.snapshot != nil {
            photo = previous?.photo ?? PhotoOutput()
            outputs.append((photo!, connection))
            // An on-demand still must come within a frame: the camera stays open (opening a USB
            // camera takes a second and its first frames are dark while exposure settles).
            schedules.append(.always)
        } else {
            photo = nil
        }
        if let motion, let motionSchedule, let detectURL = camera.detectURL {
            // Detection watches the camera's low-resolution stream, opened as a camera of its own.
            var detection = CameraPlan(
                cameraID: Self.detectionID(camera.name), matches: Self.matcher(.url(detectURL)), format: camera.format,
                frameRate: camera.frameRate, outputs: [(motion, connection)], schedule: motionSchedule.isAlways ? nil : motionSchedule)
            detection.isAuxiliary = true
            detection.fence = fence
            detectionPlan = detection
        } else {
            if let motion, let motionSchedule {
                outputs.append((motion, connection))
                schedules.append(motionSchedule)
            }
            detectionPlan = nil
        }
        live = previous?.live ?? LiveOutput(connection: connection)
        live.setConnection(connection)
        // A camera whose recording encodes H.264 shows those very packets live.
        movie?.shareEncodedPackets(with: live.mp4)
        outputs.append((live, connection))
        var plan = CameraPlan(
            cameraID: camera.name, matches: Self.matcher(camera.match), format: camera.format, frameRate: camera.frameRate,
            controls: camera.controls, outputs: outputs,
            schedule: schedules.contains(where: \.isAlways) ? nil : AnyOfSchedules(schedules))
        plan.fence = fence
        plan.timeline = timeline
        self.plan = plan
    }

    /// The camera's motion output and its schedule; the previous one when its job is unchanged
    /// (`previous` is nil when the environment changed).
    private static func motionOutput(
        _ camera: CameraConfig, _ environment: Environment, reusing previous: CameraJobs?
    ) throws -> (output: MotionOutput, schedule: Schedule)? {
        guard let job = camera.motion else { return nil }
        let schedule = try Self.schedule(job.schedule, environment)
        if previous?.camera.motion == job, let motion = previous?.motion { return (motion, schedule) }
        var settings = MotionOutput.Settings(
            motion: job.settings, masks: job.masks, storageRoot: environment.storageRoot,
            schedule: schedule.isAlways ? nil : schedule)
        // On a stream of its own, it still speaks of this camera.
        if camera.detectURL != nil { settings.camera = camera.name }
        return (MotionOutput(settings), schedule)
    }

    /// The camera's movie output (continuous, or motion only following `motion`'s timeline) and its schedule.
    private static func movieOutput(
        _ camera: CameraConfig, _ environment: Environment, motion: MotionOutput?, reusing previous: CameraJobs?
    ) throws -> (SegmentedMovieOutput, Schedule)? {
        guard let job = camera.record else { return nil }
        let schedule = try Self.schedule(job.schedule, environment)
        var motionOnly: SegmentedMovieOutput.Settings.MotionOnly?
        if job.mode == .motion, let motion, let detection = camera.motion {
            // Held back long enough for detection to be sure: its min_seconds, a few pictures, a margin.
            motionOnly = .init(
                timeline: motion.timeline, preSeconds: job.preSeconds, postSeconds: job.postSeconds,
                decisionDelaySeconds: job.preSeconds + detection.settings.minSeconds + 2)
        }
        if previous?.camera.record == job, let movie = previous?.movie,
           movie.settings.motionOnly?.timeline === motionOnly?.timeline {
            return (movie, schedule)
        }
        let movie = try SegmentedMovieOutput(.init(
            storageRoot: environment.storageRoot, segmentSeconds: job.segmentSeconds, encoding: job.encoding,
            schedule: schedule.isAlways ? nil : schedule, motionOnly: motionOnly))
        return (movie, schedule)
    }

    /// The camera's timelapse output and its schedule.
    private static func timelapseOutput(
        _ camera: CameraConfig, _ environment: Environment, reusing previous: CameraJobs?
    ) throws -> (TimelapseOutput, Schedule)? {
        guard let job = camera.timelapse else { return nil }
        let schedule = try Self.schedule(job.schedule, environment)
        if previous?.camera.timelapse == job, let timelapse = previous?.timelapse { return (timelapse, schedule) }
        let timelapse = try TimelapseOutput(.init(
            storageRoot: environment.storageRoot, intervalSeconds: job.intervalSeconds, quality: job.quality,
            schedule: schedule.isAlways ? nil : schedule))
        return (timelapse, schedule)
    }

    /// Whether the running session must be touched at all when going from `previous` to this.
    func differs(from previous: CameraJobs) -> Bool {
        previous.camera != camera || previous.environment != environment
    }

    private static func schedule(_ windows: [String], _ environment: Environment) throws -> Schedule {
        windows.isEmpty ? .always : try Schedule(windows: windows, timeZone: environment.timeZone, location: environment.location)
    }

    static func matcher(_ match: CameraMatch) -> @Sendable (CaptureDevice) -> Bool {
        switch match {
        case .id(let id): return { $0.id == id }
        case .node(let node): return { $0.details.node == node }
        case .name(let name): return { $0.name == name }
        case .url(let url): return { $0.isNetworkCamera(at: url) }
        }
    }
}

/// Active while any of several schedules is.
struct AnyOfSchedules: OutputSchedule {
    let schedules: [Schedule]

    init(_ schedules: [Schedule]) { self.schedules = schedules }

    func state(atWallNanos wallNanos: Int64) -> (isActive: Bool, untilWallNanos: Int64) {
        let states = schedules.map { $0.state(atWallNanos: wallNanos) }
        // The answer can change only when one of them changes.
        return (states.contains { $0.isActive }, states.map(\.untilWallNanos).min() ?? .max)
    }
}

extension Schedule: OutputSchedule {
    public func state(atWallNanos wallNanos: Int64) -> (isActive: Bool, untilWallNanos: Int64) {
        let date = Date(timeIntervalSince1970: Double(wallNanos) / 1e9)
        guard let next = nextChange(after: date) else { return (isActive(at: date), .max) }
        return (isActive(at: date), WallTime.clamped(next))
    }
}
