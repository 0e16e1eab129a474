import Capture
import Foundation
import Media

/// `vigil demo`'s flags, turned into a configuration that the same recorder as `vigil run`
/// records: one orchestration, not two.
public struct DemoOptions: Sendable {
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
    /// `EVENT=COMMAND` hooks and how long each may run.
    public var hooks: [String] = []
    public var hookTimeoutSeconds: Double = 30
    /// The synthetic cameras film a square crossing the picture every 10 s, and motion
    /// detection is on (`--motion`).
    public var motion = false
    /// Where the web server listens (`--listen`; loopback only, "" for none).
    public var listen = HTTPSettings.defaultListen

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

    /// The recorder's options: one camera per device (or per synthetic camera) that can do the
    /// size and rate asked, each recording segments and stills. A camera that cannot is logged
    /// and left out; none at all is an error.
    public func recorderOptions() throws -> RecorderService.Options {
        let root = URL(fileURLWithPath: outputDirectory).standardizedFileURL.path
        let synthetic = devices.isEmpty ? SyntheticDeviceSource(count: cameraCount, scene: motion ? .demo() : nil) : nil
        let candidates = synthetic?.cameras.map(\.device) ?? devices
        let format = FormatRequest.size(width: width, height: height, pixelFormat: pixelFormat)
        var cameras: [CameraConfig] = []
        var failures: [String] = []
        for device in candidates {
            do {
                _ = try device.resolve(format, frameRate: framesPerSecond)
                cameras.append(CameraConfig(
                    name: device.id, match: .id(device.id), format: format, frameRate: framesPerSecond, rotation: .none,
                    mirrored: false, controls: [:], record: RecordJob(segmentSeconds: segmentSeconds, encoding: encoding),
                    timelapse: TimelapseJob(intervalSeconds: timelapseIntervalSeconds), snapshot: nil, line: 0))
                if motion {
                    var job = MotionJob()
                    job.settings.gapSeconds = 2
                    cameras[cameras.count - 1].motion = job
                }
            } catch {
                failures.append("\(error)")
            }
        }
        guard !cameras.isEmpty else {
            throw RecorderError.refused(Array(Set(failures)).sorted().joined(separator: "\n"))
        }
        var configuration = Configuration.builtInDefault(storageRoot: root)
        configuration.discoversAllCameras = false
        configuration.cameras = cameras
        configuration.watchdogSeconds = watchdogSeconds
        configuration.http.listen = listen
        configuration.hookTimeoutSeconds = hookTimeoutSeconds
        configuration.hooks = try hooks.map { definition in
            let hook = try EventHooks(definitions: [definition]).hooks[0]
            return HookRule(event: hook.event, command: hook.command)
        }

        var options = RecorderService.Options(durationSeconds: durationSeconds)
        options.configuration = configuration
        // Scene cameras are not among the recorder's own synthetic ones: this source brings them.
        options.deviceSource = motion ? synthetic : deviceSource
        options.chaos = chaos
        options.introduction = introduction(cameras: cameras, failures: failures, root: root)
        return options
    }

    private func introduction(cameras: [CameraConfig], failures: [String], root: String) -> [String] {
        let kind = devices.isEmpty ? "synthetic camera(s)" : "camera(s)"
        let formatName = pixelFormat.map(\.rawValue) ?? "MJPEG-first"
        let what = encoding == .streamCopy ? "stream copy (MJPEG in MKV)" : "H.264"
        var lines = failures.map { "  not started: \($0)" }
        lines.append("Recording \(cameras.count) \(kind) at \(width)x\(height) \(formatName) \(DeviceFormat.rate(framesPerSecond)) fps into \(root)")
        for device in devices where cameras.contains(where: { $0.name == device.id }) {
            lines.append("  \(device.id): \(device.name) on \(device.details.node ?? "?")")
        }
        lines.append("  \(segmentSeconds) s \(what) segments, a still every \(timelapseIntervalSeconds) s. "
            + (durationSeconds.map { "Stopping after \(DeviceFormat.rate($0)) s; " } ?? "") + "Ctrl-C to stop.")
        if motion { lines.append("  Motion: a square crosses the picture from 2 s to 5 s of every 10 s; list the events with `vigil events --data \(root)`.") }
        if chaos { lines.append("  Chaos: cameras will be unplugged and wedged now and then; watch them come back.") }
        return lines
    }
}
