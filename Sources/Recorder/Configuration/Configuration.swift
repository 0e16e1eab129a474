import Capture
import Foundation
import Glibc
import Media

/// What `vigil run` does: where recordings go, which cameras, what each records and when, how
/// long things are kept. Loaded from a TOML file by `ConfigurationLoader`; see
/// `etc/vigil.example.toml` for every key and its default.
public struct Configuration: Sendable, Equatable {
    /// The file it came from (nil: the built-in default).
    public var sourcePath: String?
    public var storageRoot: String
    /// The mode of recordings and their folders (`[storage] file_mode`).
    public var fileMode = FileMode.standard
    public var timeZone: TimeZone
    /// Needed by sunrise/sunset schedules.
    public var location: GeoLocation?
    public var retention: RetentionPolicy
    public var watchdogSeconds: Double
    public var hooks: [HookRule]
    public var hookTimeoutSeconds: Double
    public var cameras: [CameraConfig]
    /// True for the built-in default: every camera present (and plugged in later) is recorded.
    public var discoversAllCameras: Bool
    /// The web server (`[http]`); on loopback by default.
    public var http = HTTPSettings()
    /// Object storage that closed recordings are copied to (`[archive]`); nil: none.
    public var archive: ArchiveSettings?
    /// The nodes' shared catalogue (`[cluster]`); nil: this machine alone, with its SQLite index.
    public var cluster: ClusterSettings?

    /// No file: every camera, continuously, 60 s segments and a still every 60 s.
    public static func builtInDefault(storageRoot: String? = nil) -> Configuration {
        Configuration(
            sourcePath: nil, storageRoot: storageRoot ?? defaultStorageRoot, timeZone: .current, location: nil,
            retention: RetentionPolicy(), watchdogSeconds: 10, hooks: [], hookTimeoutSeconds: 30, cameras: [],
            discoversAllCameras: true)
    }

    /// `/var/lib/vigil` for root (the service), else `$XDG_DATA_HOME/vigil` or `~/.local/share/vigil`.
    public static var defaultStorageRoot: String {
        if getuid() == 0 { return "/var/lib/vigil" }
        if let xdg = ProcessInfo.processInfo.environment["XDG_DATA_HOME"], !xdg.isEmpty { return xdg + "/vigil" }
        return NSHomeDirectory() + "/.local/share/vigil"
    }
}

/// A command run on an event (`[hooks] camera_lost = "…"`).
public struct HookRule: Sendable, Equatable {
    public var event: String
    public var command: String
}

/// How a configured camera finds its device (`device = "…"`).
public enum CameraMatch: Sendable, Equatable {
    /// A stable id as `vigil devices` shows it ("v4l2:…", "synthetic-0").
    case id(String)
    /// A device node ("/dev/video0"); it may change when the camera is replugged.
    case node(String)
    /// A network camera ("rtsp://…", "http://…/video.mjpg").
    case url(String)
    /// The device's product name ("HD Pro Webcam C920").
    case name(String)

    init(_ text: String) {
        if text.hasPrefix("/dev/") { self = .node(text) } else if text.contains("://") { self = .url(text) } else if text.hasPrefix("v4l2:") || text.hasPrefix("synthetic-") { self = .id(text) } else { self = .name(text) }
    }
}

/// One camera: which device, its format and controls, and its jobs. Equality ignores the lines
/// things were written on, so a reload sees only real changes.
public struct CameraConfig: Sendable, Equatable {
    /// The key in `[cameras.NAME]`; names recordings on disk.
    public var name: String
    public var match: CameraMatch
    public var format: FormatRequest
    public var frameRate: Double
    public var rotation: Rotation
    public var mirrored: Bool
    public var controls: [String: Int64]
    public var record: RecordJob?
    public var timelapse: TimelapseJob?
    public var snapshot: SnapshotJob?
    /// Motion detection (`[[motion]]`).
    public var motion: MotionJob?
    public var line: Int
    /// How a network camera's stream is carried (RTSP over TCP by default; ignored for others).
    public var transport: NetworkSource.Transport = .tcp
    /// A network camera's low-resolution second stream, for motion detection (`detect_url`).
    public var detectURL: String?
    /// `node = "…"`: in a cluster, only that node records the camera (a USB camera plugged into it).
    public var clusterNode: String?

    /// A camera found under the built-in default: recorded continuously in 60 s H.264 segments
    /// plus a still every 60 s, at 1280x720 (or the nearest size) and 15 fps.
    public static func discovered(_ deviceID: String) -> CameraConfig {
        CameraConfig(
            name: deviceID, match: .id(deviceID), format: .preset(.hd720), frameRate: 15, rotation: .none, mirrored: false,
            controls: [:], record: RecordJob(), timelapse: TimelapseJob(), snapshot: nil, line: 0)
    }

    public static func == (a: CameraConfig, b: CameraConfig) -> Bool {
        a.name == b.name && a.match == b.match && a.format == b.format && a.frameRate == b.frameRate && a.rotation == b.rotation
            && a.mirrored == b.mirrored && a.controls == b.controls && a.record == b.record && a.timelapse == b.timelapse
            && a.motion == b.motion && (a.snapshot == nil) == (b.snapshot == nil) && a.transport == b.transport
            && a.detectURL == b.detectURL && a.clusterNode == b.clusterNode
    }
}

/// Recording, possibly only inside a schedule: everything, or only the minutes with motion.
public struct RecordJob: Sendable, Equatable {
    public enum Mode: String, Sendable, CaseIterable {
        case continuous
        /// Only what the camera's `[[motion]]` finds, with `preSeconds` before and `postSeconds` after.
        case motion
    }

    /// Window texts (see `Schedule`); empty: always.
    public var schedule: [String] = []
    public var segmentSeconds = 60
    public var encoding: SegmentedMovieOutput.Encoding = .h264(EncoderSettings())
    public var mode = Mode.continuous
    public var preSeconds = 5.0
    public var postSeconds = 5.0
    public var line = 0

    public static func == (a: RecordJob, b: RecordJob) -> Bool {
        a.schedule == b.schedule && a.segmentSeconds == b.segmentSeconds && a.encoding == b.encoding && a.mode == b.mode
            && a.preSeconds == b.preSeconds && a.postSeconds == b.postSeconds
    }
}

/// Timelapse stills at aligned instants, optionally turned into a video every night.
public struct TimelapseJob: Sendable, Equatable {
    public var schedule: [String] = []
    public var intervalSeconds = 60
    public var quality = 90
    public var dailyVideo: DailyVideo?
    public var line = 0

    public static func == (a: TimelapseJob, b: TimelapseJob) -> Bool {
        a.schedule == b.schedule && a.intervalSeconds == b.intervalSeconds && a.quality == b.quality && a.dailyVideo == b.dailyVideo
    }
}

/// The nightly video of the previous day's stills.
public struct DailyVideo: Sendable, Equatable {
    public var framesPerSecond = 30
    /// Local time "HH:MM" at which it is built.
    public var at = "01:00"
}

/// Motion detection on one camera: events in the index, hooks and the API.
public struct MotionJob: Sendable, Equatable {
    public var settings = MotionSettings()
    /// Polygons to ignore, as written ("x,y" corners in pixels or percent).
    public var masks: [String] = []
    public var schedule: [String] = []
    public var line = 0

    public static func == (a: MotionJob, b: MotionJob) -> Bool {
        a.settings == b.settings && a.masks == b.masks && a.schedule == b.schedule
    }
}

/// Stills on demand (SIGUSR1).
public struct SnapshotJob: Sendable, Equatable {
    public var line: Int
}
