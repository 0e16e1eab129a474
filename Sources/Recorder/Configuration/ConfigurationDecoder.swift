import Capture
import Foundation
import Media

/// Walks the TOML document, builds the configuration and collects every diagnostic.
struct ConfigurationDecoder {
    let path: String
    private(set) var diagnostics: [ConfigurationDiagnostic] = []

    /// Where `[archive]` finds AWS_ACCESS_KEY_ID and AWS_SECRET_ACCESS_KEY without a credentials_file.
    let environment: [String: String]

    init(path: String, environment: [String: String] = ProcessInfo.processInfo.environment) {
        self.path = path
        self.environment = environment
    }

    mutating func report(_ line: Int, _ message: String, fix: String) {
        diagnostics.append(ConfigurationDiagnostic(path: path, line: line, message: Self.shortened(message), fix: Self.shortened(fix)))
    }

    /// Messages quote what the file says; a word of a huge line is cut short so the error stays readable.
    static func shortened(_ text: String) -> String {
        guard text.count > 200 else { return text }
        return text.split(separator: " ", omittingEmptySubsequences: false)
            .map { $0.count > 60 ? $0.prefix(60) + "…" : String($0) }
            .joined(separator: " ")
    }

    static let x264Presets = ["ultrafast", "superfast", "veryfast", "faster", "fast", "medium", "slow", "slower", "veryslow"]

    mutating func decode(_ document: TOMLTable) -> Configuration {
        var configuration = Configuration.builtInDefault()
        configuration.sourcePath = path
        configuration.discoversAllCameras = false
        var top = Reader(document, name: "the top level", line: 1)
        let topKeys = ["storage", "location", "retention", "supervision", "hooks", "cameras", "record", "timelapse", "snapshot", "motion", "http", "archive", "cluster"]

        decodeStorage(&top, into: &configuration)
        let hasLocation = decodeLocation(&top, into: &configuration)
        decodeRetention(&top, into: &configuration)
        if var supervision = table(&top, "supervision") {
            if let w = number(&supervision, "watchdog_seconds", in: 1...3600) { configuration.watchdogSeconds = w }
            unknown(supervision, ["watchdog_seconds"])
        }
        decodeHooks(&top, into: &configuration)
        configuration.http = decodeHTTP(&top)
        configuration.archive = decodeArchive(&top, environment: environment)
        configuration.cluster = decodeCluster(&top, environment: environment)
        if let cluster = configuration.cluster { configuration.archive = configuration.archive?.placed(node: cluster.node) }
        decodeCameras(&top, into: &configuration)
        if top.table["cluster"] == nil {
            for camera in configuration.cameras where camera.clusterNode != nil {
                report(camera.line, "camera \(camera.name) names a node, but there is no [cluster]", fix: "remove node = \"…\", or add [cluster] with the database the nodes share")
            }
        }
        decodeJobs(&top, into: &configuration, hasLocation: hasLocation)
        unknown(top, topKeys)
        return configuration
    }

    private mutating func decodeStorage(_ top: inout Reader, into configuration: inout Configuration) {
        guard var storage = table(&top, "storage") else { return }
        if let root = string(&storage, "root") { configuration.storageRoot = root.value }
        if let mode = string(&storage, "file_mode") {
            if let fileMode = FileMode(octal: mode.value) {
                configuration.fileMode = fileMode
            } else {
                report(mode.line, "file_mode \"\(mode.value)\" is not a mode for recordings",
                       fix: "write an octal mode in quotes that lets the owner read and write and executes nothing, e.g. \"0640\" (group may read) or \"0600\" (owner only)")
            }
        }
        unknown(storage, ["root", "file_mode"])
    }

    /// Whether the file gives a location (sunrise and sunset in schedules need one).
    private mutating func decodeLocation(_ top: inout Reader, into configuration: inout Configuration) -> Bool {
        guard var location = table(&top, "location") else { return false }
        var hasLocation = false
        let latitude = number(&location, "latitude", in: -90...90)
        let longitude = number(&location, "longitude", in: -180...180)
        if let latitude, let longitude {
            configuration.location = GeoLocation(latitude: latitude, longitude: longitude)
            hasLocation = true
        } else if (latitude == nil) != (longitude == nil) {
            report(location.line, "[location] needs both latitude and longitude", fix: "add the missing one (degrees, north and east positive)")
        }
        if let zone = string(&location, "time_zone") {
            if let tz = TimeZone(identifier: zone.value) {
                configuration.timeZone = tz
            } else {
                report(zone.line, "unknown time zone \"\(zone.value)\"", fix: "use an IANA name such as Europe/Berlin or America/New_York (see timedatectl list-timezones)")
            }
        }
        unknown(location, ["latitude", "longitude", "time_zone"])
        return hasLocation
    }

    private mutating func decodeRetention(_ top: inout Reader, into configuration: inout Configuration) {
        guard var retention = table(&top, "retention") else { return }
        let limits = retentionLimits(&retention, defaults: CameraRetention(videos: configuration.retention.videos, stills: configuration.retention.stills))
        configuration.retention.videos = limits.videos
        configuration.retention.stills = limits.stills
        if let p = number(&retention, "min_free_percent", in: 0...50) { configuration.retention.minFreePercent = p }
        if let b = size(&retention, "min_free_bytes") { configuration.retention.minFreeBytes = b }
        unknown(retention, Self.retentionKeys + ["min_free_percent", "min_free_bytes"])
    }

    private mutating func decodeHooks(_ top: inout Reader, into configuration: inout Configuration) {
        guard var hooks = table(&top, "hooks") else { return }
        if let t = number(&hooks, "timeout_seconds", in: 1...86_400) { configuration.hookTimeoutSeconds = t }
        for (key, node) in hooks.table.entries where key != "timeout_seconds" {
            hooks.used.insert(key)
            guard RecorderEvent.names.contains(key) else {
                report(node.line, "unknown event \(key)\(Suggestion.phrase(for: key, among: RecorderEvent.names))",
                       fix: "events: \(RecorderEvent.names.joined(separator: ", "))")
                continue
            }
            guard case .string(let command) = node.value, !command.isEmpty else {
                report(node.line, "hook \(key) must be a command in quotes, got \(node.typeName)", fix: "write \(key) = \"logger vigil: $VIGIL_CAMERA\"")
                continue
            }
            configuration.hooks.append(HookRule(event: key, command: command))
        }
    }

    private mutating func decodeCameras(_ top: inout Reader, into configuration: inout Configuration) {
        if var cameras = table(&top, "cameras") {
            for (name, node) in cameras.table.entries {
                cameras.used.insert(name)
                guard case .table(let t) = node.value else {
                    report(node.line, "cameras.\(name) must be a table", fix: "write [cameras.\(name)] and its keys below it")
                    continue
                }
                if let camera = decodeCamera(name, Reader(t, name: "[cameras.\(name)]", line: node.line), &configuration.retention) {
                    configuration.cameras.append(camera)
                }
            }
        }
        // A file that names no camera would record nothing, silently; saved half-written, a reload
        // would stop every camera. Either is a mistake worth an error.
        if configuration.cameras.isEmpty && diagnostics.isEmpty {
            report(1, "the file names no camera: nothing would be recorded",
                   fix: "add a [cameras.NAME] table with device = \"/dev/video0\" or url = \"rtsp://…\" (see `vigil devices`), or run vigil without --config to record every camera present")
        }
    }

    static let retentionKeys = ["max_age_days", "max_bytes", "stills_max_age_days", "stills_max_bytes"]

    mutating func retentionLimits(_ r: inout Reader, defaults: CameraRetention) -> CameraRetention {
        var limits = defaults
        if let d = number(&r, "max_age_days", in: 0.01...100_000) { limits.videos.maxAgeDays = d }
        if let b = size(&r, "max_bytes") { limits.videos.maxBytes = b }
        if let d = number(&r, "stills_max_age_days", in: 0.01...100_000) { limits.stills.maxAgeDays = d }
        if let b = size(&r, "stills_max_bytes") { limits.stills.maxBytes = b }
        return limits
    }
}
