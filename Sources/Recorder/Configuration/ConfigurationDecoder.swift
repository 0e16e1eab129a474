import Capture
import Foundation
import Media

/// Walks the TOML document, builds the configuration and collects every diagnostic.
struct ConfigurationDecoder {
    let path: String
    private(set) var diagnostics: [ConfigurationDiagnostic] = []

    init(path: String) { self.path = path }

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
        let topKeys = ["storage", "location", "retention", "supervision", "hooks", "cameras", "record", "timelapse", "snapshot", "motion", "http"]

        if var storage = table(&top, "storage") {
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
        var hasLocation = false
        if var location = table(&top, "location") {
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
        }
        if var retention = table(&top, "retention") {
            let limits = retentionLimits(&retention, defaults: CameraRetention(videos: configuration.retention.videos, stills: configuration.retention.stills))
            configuration.retention.videos = limits.videos
            configuration.retention.stills = limits.stills
            if let p = number(&retention, "min_free_percent", in: 0...50) { configuration.retention.minFreePercent = p }
            if let b = size(&retention, "min_free_bytes") { configuration.retention.minFreeBytes = b }
            unknown(retention, Self.retentionKeys + ["min_free_percent", "min_free_bytes"])
        }
        if var supervision = table(&top, "supervision") {
            if let w = number(&supervision, "watchdog_seconds", in: 1...3600) { configuration.watchdogSeconds = w }
            unknown(supervision, ["watchdog_seconds"])
        }
        if var hooks = table(&top, "hooks") {
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

        configuration.http = decodeHTTP(&top)

        // Cameras.
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
        let names = configuration.cameras.map(\.name)

        // Jobs, each naming its camera.
        for (_, node) in jobTables(&top, "record") {
            var job = node
            // An unknown camera is reported, and the rest of the job is still checked.
            let index = cameraIndex(&job, kind: "record", names: names, cameras: configuration.cameras)
            if let index, let existing = configuration.cameras[index].record {
                report(job.line, "camera \(names[index]) already has a [[record]] job (line \(existing.line))", fix: "merge them: one job can have several schedule windows")
                continue
            }
            var record = RecordJob()
            record.line = job.line
            record.schedule = schedule(&job, hasLocation: hasLocation)
            if let s = integer(&job, "segment_seconds", in: 1...86_400) { record.segmentSeconds = s }
            var settings = EncoderSettings()
            if let crf = integer(&job, "crf", in: 0...51) { settings.rateControl = .crf(crf) }
            if let p = string(&job, "x264_preset") {
                if Self.x264Presets.contains(p.value) { settings.preset = p.value } else {
                    report(p.line, "unknown x264_preset \"\(p.value)\"\(Suggestion.phrase(for: p.value, among: Self.x264Presets))", fix: "use one of: \(Self.x264Presets.joined(separator: ", "))")
                }
            }
            if let threads = integer(&job, "x264_threads", in: 0...64) { settings.threads = threads }
            if let mode = string(&job, "mode") {
                if let value = RecordJob.Mode(rawValue: mode.value) { record.mode = value } else {
                    report(mode.line, "unknown mode \"\(mode.value)\"\(Suggestion.phrase(for: mode.value, among: RecordJob.Mode.allCases.map(\.rawValue)))",
                           fix: "use \"continuous\" (the default) or \"motion\" (only events, with pre_seconds and post_seconds around them)")
                }
            }
            if let pre = number(&job, "pre_seconds", in: 0...60) { record.preSeconds = pre }
            if let post = number(&job, "post_seconds", in: 0...600) { record.postSeconds = post }
            record.encoding = .h264(settings)
            // A network camera's packets are recorded as they arrive unless told otherwise.
            if let index, case .url = configuration.cameras[index].match,
               configuration.cameras[index].rotation == .none && !configuration.cameras[index].mirrored {
                record.encoding = .streamCopy
            }
            if let codec = string(&job, "codec") {
                switch codec.value {
                case "h264": record.encoding = .h264(settings)
                case "copy":
                    record.encoding = .streamCopy
                    if let index, configuration.cameras[index].rotation != .none || configuration.cameras[index].mirrored {
                        let camera = configuration.cameras[index]
                        report(codec.line, "codec = \"copy\" cannot rotate or mirror camera \(camera.name)", fix: "use codec = \"h264\", or remove rotation/mirror")
                    }
                default:
                    report(codec.line, "unknown codec \"\(codec.value)\"", fix: "use \"h264\" (encode) or \"copy\" (record the camera's MJPEG as is)")
                }
            }
            unknown(job, ["camera", "schedule", "segment_seconds", "codec", "crf", "x264_preset", "x264_threads", "mode", "pre_seconds", "post_seconds"])
            if let index { configuration.cameras[index].record = record }
        }
        for (_, node) in jobTables(&top, "timelapse") {
            var job = node
            let index = cameraIndex(&job, kind: "timelapse", names: names, cameras: configuration.cameras)
            if let index, let existing = configuration.cameras[index].timelapse {
                report(job.line, "camera \(names[index]) already has a [[timelapse]] job (line \(existing.line))", fix: "merge them: one job can have several schedule windows")
                continue
            }
            var timelapse = TimelapseJob()
            timelapse.line = job.line
            timelapse.schedule = schedule(&job, hasLocation: hasLocation)
            if let s = integer(&job, "interval_seconds", in: 1...86_400) { timelapse.intervalSeconds = s }
            if let q = integer(&job, "quality", in: 1...100) { timelapse.quality = q }
            if let node = job.take("daily_video") {
                switch node.value {
                case .boolean(let on): timelapse.dailyVideo = on ? DailyVideo() : nil
                case .table(let t):
                    var video = DailyVideo()
                    var r = Reader(t, name: "daily_video", line: node.line)
                    if let fps = integer(&r, "fps", in: 1...120) { video.framesPerSecond = fps }
                    if let at = string(&r, "at") {
                        let parts = at.value.split(separator: ":")
                        if parts.count == 2, parts[1].count == 2, let h = Int(parts[0]), let m = Int(parts[1]), (0..<24).contains(h), (0..<60).contains(m) {
                            video.at = at.value
                        } else {
                            report(at.line, "daily_video at \"\(at.value)\" is not a time of day", fix: "use HH:MM, e.g. at = \"01:00\"")
                        }
                    }
                    unknown(r, ["fps", "at"])
                    timelapse.dailyVideo = video
                default:
                    report(node.line, "daily_video must be true/false or { fps = 30, at = \"01:00\" }, got \(node.typeName)", fix: "write daily_video = true")
                }
            }
            unknown(job, ["camera", "schedule", "interval_seconds", "quality", "daily_video"])
            if let index { configuration.cameras[index].timelapse = timelapse }
        }
        for (_, node) in jobTables(&top, "motion") {
            var job = node
            let index = cameraIndex(&job, kind: "motion", names: names, cameras: configuration.cameras)
            if let index, let existing = configuration.cameras[index].motion {
                report(job.line, "camera \(names[index]) already has a [[motion]] job (line \(existing.line))", fix: "merge them: one job can have several schedule windows and masks")
                continue
            }
            let motion = decodeMotion(&job, hasLocation: hasLocation)
            if let index { configuration.cameras[index].motion = motion }
        }
        // Motion-only recording keeps what the camera's motion detection finds: it needs one.
        // So does a detection stream.
        for camera in configuration.cameras {
            if camera.detectURL != nil && camera.motion == nil {
                report(camera.line, "camera \(camera.name) has a detect_url but no [[motion]] table: nothing would use it",
                       fix: "add [[motion]] with camera = \"\(camera.name)\", or remove detect_url")
            }
            if let record = camera.record, record.mode == .motion, camera.motion == nil {
                report(record.line, "camera \(camera.name) records mode = \"motion\" but has no [[motion]] table",
                       fix: "add [[motion]] with camera = \"\(camera.name)\" (its defaults are sane), or record mode = \"continuous\"")
            }
        }
        for (_, node) in jobTables(&top, "snapshot") {
            var job = node
            guard let index = cameraIndex(&job, kind: "snapshot", names: names, cameras: configuration.cameras) else { continue }
            configuration.cameras[index].snapshot = SnapshotJob(line: job.line)
            unknown(job, ["camera"])
        }
        unknown(top, topKeys)
        return configuration
    }

    private mutating func decodeCamera(_ name: String, _ reader: Reader, _ retention: inout RetentionPolicy) -> CameraConfig? {
        var r = reader
        let valid = !name.isEmpty && name.allSatisfy { $0.isASCII && ($0.isLetter || $0.isNumber || $0 == "-" || $0 == "_") }
        if !valid {
            report(r.line, "camera name \"\(name)\" may hold only letters, digits, - and _", fix: "rename it, e.g. [cameras.front-door] (it names the folder of its recordings)")
        }
        var camera = CameraConfig.discovered(name)
        camera.record = nil
        camera.timelapse = nil
        camera.line = r.line
        let device = string(&r, "device"), url = string(&r, "url"), passwordFile = string(&r, "password_file")
        if let device, let url {
            report(url.line, "camera \(name) has both device (line \(device.line)) and url", fix: "keep url for a network camera, device for a USB one")
        } else if let url {
            camera.match = networkMatch(url, passwordFile: passwordFile, camera: name)
        } else if let device, device.value.contains("://") {
            camera.match = networkMatch(device, passwordFile: nil, camera: name)
        } else if let device {
            camera.match = CameraMatch(device.value)
        } else {
            report(r.line, "camera \(name) has no device", fix: "add device = \"v4l2:…\" (an id from `vigil devices`), a node such as \"/dev/video0\", the camera's name, or url = \"rtsp://…\" for a network camera")
        }
        if let detect = string(&r, "detect_url") {
            if url != nil, case .url(let address) = networkMatch(detect, passwordFile: passwordFile, camera: name) {
                camera.detectURL = address
            } else if url == nil {
                report(detect.line, "detect_url goes with a network camera (url = \"rtsp://…\")", fix: "remove it, or give the camera its url")
            }
        }
        if let passwordFile, url == nil {
            report(passwordFile.line, "password_file goes with url (a network camera)", fix: "write the camera's address as url = \"rtsp://USER@host/…\"")
        }
        if let transport = string(&r, "transport") {
            if case .url = camera.match, let value = NetworkSource.Transport(rawValue: transport.value) {
                camera.transport = value
            } else if case .url = camera.match {
                report(transport.line, "unknown transport \"\(transport.value)\"", fix: "use \"tcp\" (the default) or \"udp\"")
            } else {
                report(transport.line, "transport goes with a network camera (url = \"rtsp://…\")", fix: "remove it")
            }
        }
        let preset = string(&r, "preset")
        let size = string(&r, "size")
        var pixelFormat: PixelFormat?
        if let f = string(&r, "pixel_format") {
            let capture: [PixelFormat] = [.mjpeg, .yuyv422, .nv12, .yuv420p, .h264]
            if let p = PixelFormat(rawValue: f.value), capture.contains(p) { pixelFormat = p } else {
                report(f.line, "unknown pixel_format \"\(f.value)\"\(Suggestion.phrase(for: f.value, among: capture.map(\.rawValue)))", fix: "use mjpeg or yuyv422")
            }
        }
        if let preset, size != nil {
            report(preset.line, "camera \(name) has both preset and size", fix: "keep one of them")
        } else if let preset {
            if let p = Preset(rawValue: preset.value) { camera.format = .preset(p) } else {
                let all = Preset.allCases.map(\.rawValue)
                report(preset.line, "unknown preset \"\(preset.value)\"\(Suggestion.phrase(for: preset.value, among: all))", fix: "use one of: \(all.joined(separator: ", ")), or size = \"1280x720\"")
            }
            if pixelFormat != nil { report(preset.line, "pixel_format goes with size, not with preset", fix: "use size = \"WIDTHxHEIGHT\" with pixel_format") }
        } else if let size {
            let parts = size.value.lowercased().split(separator: "x").compactMap { Int($0) }
            if parts.count == 2, (16...8192).contains(parts[0]), (16...8192).contains(parts[1]) {
                camera.format = .size(width: parts[0], height: parts[1], pixelFormat: pixelFormat)
            } else {
                report(size.line, "size \"\(size.value)\" is not WIDTHxHEIGHT", fix: "write e.g. size = \"1280x720\"")
            }
        } else if pixelFormat != nil {
            report(r.line, "pixel_format needs a size", fix: "add size = \"WIDTHxHEIGHT\"")
        }
        if let fps = number(&r, "fps", in: 1...120) { camera.frameRate = fps }
        if let rotation = integer(&r, "rotation", in: 0...270) {
            if let value = Rotation(rawValue: rotation) { camera.rotation = value } else {
                report(r.lastLine, "rotation must be 0, 90, 180 or 270, not \(rotation)", fix: "turn the picture by a quarter turn clockwise: 90")
            }
        }
        if let mirror = boolean(&r, "mirror") { camera.mirrored = mirror }
        if var controls = table(&r, "controls") {
            for (key, node) in controls.table.entries {
                controls.used.insert(key)
                switch node.value {
                case .integer(let v): camera.controls[key] = v
                case .boolean(let b): camera.controls[key] = b ? 1 : 0
                default: report(node.line, "control \(key) must be a number (or true/false), got \(node.typeName)", fix: "write \(key) = 128")
                }
            }
        }
        if var limits = table(&r, "retention") {
            let defaults = CameraRetention(videos: retention.videos, stills: retention.stills)
            retention.cameras[name] = retentionLimits(&limits, defaults: defaults)
            unknown(limits, Self.retentionKeys)
        }
        unknown(r, ["device", "url", "detect_url", "password_file", "transport", "preset", "size", "pixel_format", "fps", "rotation", "mirror", "controls", "retention"])
        return valid ? camera : nil
    }

    static let retentionKeys = ["max_age_days", "max_bytes", "stills_max_age_days", "stills_max_bytes"]

    private mutating func retentionLimits(_ r: inout Reader, defaults: CameraRetention) -> CameraRetention {
        var limits = defaults
        if let d = number(&r, "max_age_days", in: 0.01...100_000) { limits.videos.maxAgeDays = d }
        if let b = size(&r, "max_bytes") { limits.videos.maxBytes = b }
        if let d = number(&r, "stills_max_age_days", in: 0.01...100_000) { limits.stills.maxAgeDays = d }
        if let b = size(&r, "stills_max_bytes") { limits.stills.maxBytes = b }
        return limits
    }
}
