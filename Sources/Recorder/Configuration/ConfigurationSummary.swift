import Capture
import Foundation
import Media

extension Configuration {
    /// What `vigil check-config` prints for a valid file: cameras, their jobs and schedules,
    /// storage and retention, and which cameras are not present now.
    public func summary(present devices: [CaptureDevice]) -> String {
        var lines: [String] = []
        lines.append("storage: \(storageRoot) (files \(fileMode), folders 0\(String(fileMode.directory, radix: 8)))")
        let zone = timeZone.identifier + (location.map { String(format: ", location %.4f, %.4f", $0.latitude, $0.longitude) } ?? "")
        lines.append("time zone: \(zone)")
        lines.append("retention: " + Self.describe(retention.videos, "videos") + "; " + Self.describe(retention.stills, "stills")
            + "; keep \(DeviceFormat.rate(retention.minFreePercent)) % or \(Self.gib(retention.minFreeBytes)) free")
        for camera in cameras {
            let device = devices.first(where: CameraJobs.matcher(camera.match))
            let presence: String
            if case .url = camera.match {
                presence = " — network camera over \(camera.transport.rawValue.uppercased()) (connected and retried while recording)"
            } else {
                presence = device.map { " — present (\($0.id))" } ?? " — note: not present now; it will be recorded when it appears"
            }
            lines.append("camera \(camera.name): \(camera.match.text), \(camera.format), \(DeviceFormat.rate(camera.frameRate)) fps" + presence)
            if let detect = camera.detectURL { lines.append("  detection stream: \(CameraMatch.url(detect).text)") }
            if let r = camera.record {
                let codec: String
                if case .h264(let s) = r.encoding, case .crf(let q) = s.rateControl {
                    codec = "H.264 crf \(q) \(s.preset)" + (s.threads > 0 ? ", \(s.threads) x264 thread(s)" : "")
                } else { codec = "stream copy" }
                let what = r.mode == .motion
                    ? "motion only (\(DeviceFormat.rate(r.preSeconds)) s before, \(DeviceFormat.rate(r.postSeconds)) s after), " : ""
                lines.append("  record: \(what)\(r.segmentSeconds) s segments, \(codec), " + Self.when(r.schedule))
            }
            if let t = camera.timelapse {
                lines.append("  timelapse: a still every \(t.intervalSeconds) s, quality \(t.quality), " + Self.when(t.schedule)
                    + (t.dailyVideo.map { "; daily video at \($0.at), \($0.framesPerSecond) fps" } ?? ""))
            }
            if camera.snapshot != nil { lines.append("  snapshot: on SIGUSR1") }
            if let m = camera.motion {
                let s = m.settings
                lines.append("  motion: \(s.sensitivity.rawValue) sensitivity, at least \(DeviceFormat.rate(s.minAreaPercent)) % of the picture for "
                    + "\(DeviceFormat.rate(s.minSeconds)) s, events end after \(DeviceFormat.rate(s.gapSeconds)) s of quiet, "
                    + "\(m.masks.count) mask(s), " + Self.when(m.schedule))
            }
            if camera.record == nil && camera.timelapse == nil && camera.snapshot == nil && camera.motion == nil { lines.append("  no jobs: it is not opened") }
            if let own = retention.cameras[camera.name] {
                lines.append("  retention: " + Self.describe(own.videos, "videos") + "; " + Self.describe(own.stills, "stills"))
            }
        }
        for hook in hooks { lines.append("hook \(hook.event): \(hook.command)") }
        if http.isEnabled {
            lines.append("http: \(http.pageAddress), " + (http.tokenFile.map { "token from \($0)" } ?? "no token_file (loopback only; users of vigil user add log in)")
                + ", at most \(http.maxLiveClients) live viewer(s), \(http.maxClips) clip(s) at once, \(http.maxConnections) connection(s)"
                + " (\(http.maxConnectionsPerClient) per client)" + (http.allowedHosts.isEmpty ? "" : ", also answers to \(http.allowedHosts.joined(separator: ", "))"))
        } else {
            lines.append("http: off")
        }
        if let archive {
            let keep = archive.keepLocalDays.map { "local copies kept \(DeviceFormat.rate($0)) days" } ?? "local copies kept while retention allows"
            lines.append("archive: \(archive.url) at \(archive.endpoint ?? "AWS") (\(archive.region)), keys from \(archive.credentials.source); \(keep); "
                + (archive.maxAgeDays.map { "archived files deleted after \(DeviceFormat.rate($0)) days" } ?? "archived files kept for ever")
                + (archive.uploadBytesPerSecond.map { ", uploads at most \(DeviceFormat.rate(Double($0) * 8 / 1_000_000)) Mbit/s" } ?? ""))
        }
        if let cluster {
            let pinned = cameras.filter { $0.clusterNode != nil }.map { "\($0.name) on \($0.clusterNode!)" }
            lines.append("cluster: node \(cluster.node), database \(cluster.database)" + (cluster.database.isLoopback ? "" : " (TLS)")
                + ", \(cluster.password?.description ?? "no password"), leases of \(cluster.leaseSeconds) s"
                + (pinned.isEmpty ? "" : "; pinned: " + pinned.joined(separator: ", ")))
        }
        return lines.joined(separator: "\n")
    }

    private static func when(_ schedule: [String]) -> String {
        schedule.isEmpty ? "always" : "during " + schedule.joined(separator: ", ")
    }

    private static func describe(_ limits: RetentionLimits, _ what: String) -> String {
        var parts: [String] = []
        if let days = limits.maxAgeDays { parts.append("\(DeviceFormat.rate(days)) days") }
        if let bytes = limits.maxBytes { parts.append(gib(bytes)) }
        return "\(what) " + (parts.isEmpty ? "kept while there is room" : "at most " + parts.joined(separator: " and "))
    }

    private static func gib(_ bytes: Int64) -> String { String(format: "%.1f GiB", Double(bytes) / 1_073_741_824) }
}

extension CameraMatch: CustomStringConvertible, CustomDebugStringConvertible {
    /// As written in the file, but never with a camera's password.
    var text: String {
        switch self {
        case .id(let s), .node(let s), .name(let s): return "device \"\(s)\""
        case .url(let s): return "url \"\(redactedAddress(s))\""
        }
    }

    // Printed, also as a part of a value printed whole (swift-service-lifecycle's debug log
    // prints its services, and so the configuration some of them hold), it is redacted.
    public var description: String { text }
    public var debugDescription: String { text }
}

extension CameraConfig: CustomDebugStringConvertible {
    /// Its name and addresses, redacted: what a value printed whole shows of a camera.
    public var debugDescription: String {
        "CameraConfig(\(name), \(match.text)" + (detectURL.map { ", detect_url \"\(redactedAddress($0))\"" } ?? "") + ")"
    }
}
