import Capture
import Media

/// The jobs of a configuration, each naming its camera: [[record]], [[timelapse]], [[motion]]
/// and [[snapshot]] tables. An unknown camera is reported, and the rest of the job still checked.
extension ConfigurationDecoder {
    mutating func decodeJobs(_ top: inout Reader, into configuration: inout Configuration, hasLocation: Bool) {
        for (_, node) in jobTables(&top, "record") {
            var job = node
            guard let index = claimCamera(&job, "record", in: configuration, existing: \.record?.line) else { continue }
            let record = decodeRecord(&job, camera: index.map { configuration.cameras[$0] }, hasLocation: hasLocation)
            if let index { configuration.cameras[index].record = record }
        }
        for (_, node) in jobTables(&top, "timelapse") {
            var job = node
            guard let index = claimCamera(&job, "timelapse", in: configuration, existing: \.timelapse?.line) else { continue }
            let timelapse = decodeTimelapse(&job, hasLocation: hasLocation)
            if let index { configuration.cameras[index].timelapse = timelapse }
        }
        for (_, node) in jobTables(&top, "motion") {
            var job = node
            guard let index = claimCamera(&job, "motion", in: configuration, existing: \.motion?.line) else { continue }
            let motion = decodeMotion(&job, hasLocation: hasLocation)
            if let index { configuration.cameras[index].motion = motion }
        }
        checkMotionIsThere(for: configuration.cameras)
        for (_, node) in jobTables(&top, "snapshot") {
            var job = node
            guard let index = cameraIndex(&job, kind: "snapshot", names: configuration.cameras.map(\.name), cameras: configuration.cameras) else { continue }
            configuration.cameras[index].snapshot = SnapshotJob(line: job.line)
            unknown(job, ["camera"])
        }
    }

    /// The camera a [[KIND]] job names: `.some(nil)` when it names none known (reported; the rest
    /// of the job is still checked), nil when that camera already has a job of this kind
    /// (`existing` gives its line; reported, and the job is left out).
    private mutating func claimCamera(
        _ job: inout Reader, _ kind: String, in configuration: Configuration, existing: KeyPath<CameraConfig, Int?>
    ) -> Int?? {
        let names = configuration.cameras.map(\.name)
        let index = cameraIndex(&job, kind: kind, names: names, cameras: configuration.cameras)
        if let index, let line = configuration.cameras[index][keyPath: existing] {
            let merge = kind == "motion" ? "one job can have several schedule windows and masks" : "one job can have several schedule windows"
            report(job.line, "camera \(names[index]) already has a [[\(kind)]] job (line \(line))", fix: "merge them: \(merge)")
            return nil
        }
        return .some(index)
    }

    /// One [[record]] job; `camera` is the one it names, if known (a network camera's packets
    /// are recorded as they arrive unless told otherwise).
    private mutating func decodeRecord(_ job: inout Reader, camera: CameraConfig?, hasLocation: Bool) -> RecordJob {
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
        if let camera, case .url = camera.match, camera.rotation == .none && !camera.mirrored {
            record.encoding = .streamCopy
        }
        if let codec = string(&job, "codec") {
            switch codec.value {
            case "h264": record.encoding = .h264(settings)
            case "copy":
                record.encoding = .streamCopy
                if let camera, camera.rotation != .none || camera.mirrored {
                    report(codec.line, "codec = \"copy\" cannot rotate or mirror camera \(camera.name)", fix: "use codec = \"h264\", or remove rotation/mirror")
                }
            default:
                report(codec.line, "unknown codec \"\(codec.value)\"", fix: "use \"h264\" (encode) or \"copy\" (record the camera's MJPEG as is)")
            }
        }
        unknown(job, ["camera", "schedule", "segment_seconds", "codec", "crf", "x264_preset", "x264_threads", "mode", "pre_seconds", "post_seconds"])
        return record
    }

    private mutating func decodeTimelapse(_ job: inout Reader, hasLocation: Bool) -> TimelapseJob {
        var timelapse = TimelapseJob()
        timelapse.line = job.line
        timelapse.schedule = schedule(&job, hasLocation: hasLocation)
        if let s = integer(&job, "interval_seconds", in: 1...86_400) { timelapse.intervalSeconds = s }
        if let q = integer(&job, "quality", in: 1...100) { timelapse.quality = q }
        if let node = job.take("daily_video") { decodeDailyVideo(node, into: &timelapse.dailyVideo) }
        unknown(job, ["camera", "schedule", "interval_seconds", "quality", "daily_video"])
        return timelapse
    }

    /// `daily_video = true` or a table of its settings; what is wrong is reported and leaves `dailyVideo` as it was.
    private mutating func decodeDailyVideo(_ node: TOMLNode, into dailyVideo: inout DailyVideo?) {
        switch node.value {
        case .boolean(let on): dailyVideo = on ? DailyVideo() : nil
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
            dailyVideo = video
        default:
            report(node.line, "daily_video must be true/false or { fps = 30, at = \"01:00\" }, got \(node.typeName)", fix: "write daily_video = true")
        }
    }

    /// Motion-only recording keeps what the camera's motion detection finds: it needs one.
    /// So does a detection stream.
    private mutating func checkMotionIsThere(for cameras: [CameraConfig]) {
        for camera in cameras {
            if camera.detectURL != nil && camera.motion == nil {
                report(camera.line, "camera \(camera.name) has a detect_url but no [[motion]] table: nothing would use it",
                       fix: "add [[motion]] with camera = \"\(camera.name)\", or remove detect_url")
            }
            if let record = camera.record, record.mode == .motion, camera.motion == nil {
                report(record.line, "camera \(camera.name) records mode = \"motion\" but has no [[motion]] table",
                       fix: "add [[motion]] with camera = \"\(camera.name)\" (its defaults are sane), or record mode = \"continuous\"")
            }
        }
    }
}
