import Capture
import Media

/// One [cameras.NAME] table: where the camera is (a device or a network address), the picture
/// it is asked for, its controls and its own retention limits.
extension ConfigurationDecoder {
    mutating func decodeCamera(_ name: String, _ reader: Reader, _ retention: inout RetentionPolicy) -> CameraConfig? {
        var r = reader
        let valid = !name.isEmpty && name.allSatisfy { $0.isASCII && ($0.isLetter || $0.isNumber || $0 == "-" || $0 == "_") }
        if !valid {
            report(r.line, "camera name \"\(name)\" may hold only letters, digits, - and _", fix: "rename it, e.g. [cameras.front-door] (it names the folder of its recordings)")
        }
        var camera = CameraConfig.discovered(name)
        camera.record = nil
        camera.timelapse = nil
        camera.line = r.line
        decodeSource(&r, camera: &camera)
        decodePicture(&r, camera: &camera)
        if let fps = number(&r, "fps", in: 1...120) { camera.frameRate = fps }
        if let rotation = integer(&r, "rotation", in: 0...270) {
            if let value = Rotation(rawValue: rotation) { camera.rotation = value } else {
                report(r.lastLine, "rotation must be 0, 90, 180 or 270, not \(rotation)", fix: "turn the picture by a quarter turn clockwise: 90")
            }
        }
        if let mirror = boolean(&r, "mirror") { camera.mirrored = mirror }
        if let node = string(&r, "node") {
            if NodeName.isValid(node.value) { camera.clusterNode = node.value } else {
                report(node.line, "node \"\(node.value)\" is not a node name", fix: "use the name of the node it is plugged into: 1–63 of a-z 0-9 . _ -")
            }
        }
        if var controls = table(&r, "controls") { decodeControls(&controls, camera: &camera) }
        if var limits = table(&r, "retention") {
            let defaults = CameraRetention(videos: retention.videos, stills: retention.stills)
            retention.cameras[name] = retentionLimits(&limits, defaults: defaults)
            unknown(limits, Self.retentionKeys)
        }
        unknown(r, ["device", "url", "detect_url", "password_file", "transport", "preset", "size", "pixel_format", "fps", "rotation", "mirror", "controls", "retention", "node"])
        return valid ? camera : nil
    }

    /// `device`, or `url` with its `password_file`, `detect_url` and `transport`.
    private mutating func decodeSource(_ r: inout Reader, camera: inout CameraConfig) {
        let name = camera.name
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
    }

    /// `preset`, or `size` with an optional `pixel_format`.
    private mutating func decodePicture(_ r: inout Reader, camera: inout CameraConfig) {
        let name = camera.name
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
    }

    /// [cameras.NAME.controls]: V4L2 controls by name, numbers or true/false.
    private mutating func decodeControls(_ controls: inout Reader, camera: inout CameraConfig) {
        for (key, node) in controls.table.entries {
            controls.used.insert(key)
            switch node.value {
            case .integer(let v): camera.controls[key] = v
            case .boolean(let b): camera.controls[key] = b ? 1 : 0
            default: report(node.line, "control \(key) must be a number (or true/false), got \(node.typeName)", fix: "write \(key) = 128")
            }
        }
    }
}
