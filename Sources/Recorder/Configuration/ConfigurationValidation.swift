import Capture

/// Validation against the devices present: what the configuration asks of each camera that is
/// connected, checked before anything starts (the file itself was checked by the decoder).
extension Configuration {
    /// What the present cameras cannot do as configured (format, frame rate, controls, stream
    /// copy from an uncompressed format). Cameras that are not present are not checked.
    public func problems(with devices: [CaptureDevice]) -> [ConfigurationDiagnostic] {
        var problems: [ConfigurationDiagnostic] = []
        let path = sourcePath ?? "configuration"
        for camera in cameras {
            guard let device = devices.first(where: CameraJobs.matcher(camera.match)) else { continue }
            func report(_ message: String, _ fix: String) {
                problems.append(ConfigurationDiagnostic(path: path, line: camera.line, message: "camera \(camera.name) (\(device.id)): \(message)", fix: fix))
            }
            do {
                let format = try device.resolve(camera.format, frameRate: camera.frameRate)
                if camera.record?.encoding == .streamCopy && !format.pixelFormat.isCompressed {
                    report("codec = \"copy\" needs a compressed camera format, but it would deliver \(format.pixelFormat)",
                           "set pixel_format = \"mjpeg\" or codec = \"h264\"")
                }
                let shown = camera.rotation.size(width: format.width, height: format.height)
                for mask in camera.motion?.masks ?? [] where MotionSettings.mask(mask, width: shown.width, height: shown.height) == nil {
                    problems.append(ConfigurationDiagnostic(
                        path: path, line: camera.motion!.line,
                        message: "camera \(camera.name): motion mask \"\(mask)\" reaches outside its \(shown.width)x\(shown.height) picture",
                        fix: "give corners within 0…\(shown.width) and 0…\(shown.height), or in percent"))
                }
            } catch {
                report("\(error)", "pick a size, pixel format and fps that `vigil devices` lists for it")
            }
            for (key, value) in camera.controls.sorted(by: { $0.key < $1.key }) {
                guard let control = device.control(key) else {
                    report("has no control \(key)\(Suggestion.phrase(for: key, among: device.controls.map(\.key)))",
                           "use one of: \(device.controls.map(\.key).joined(separator: ", "))")
                    continue
                }
                do { _ = try control.validated(value, camera: device.id) } catch { report("\(error)", "see `vigil devices` for the control's range") }
            }
        }
        return problems
    }
}
