import Capture

/// Finds the camera a user named on the command line: by identity (with or without its
/// `v4l2:` prefix), by node path (`/dev/video0`), or by name.
public enum CameraSelection {
    public static func find(_ name: String, in devices: [CaptureDevice]) throws -> CaptureDevice {
        let match = devices.first { $0.id == name || $0.id == "v4l2:\(name)" || $0.details.node == name }
            ?? devices.first { $0.name == name }
        guard let match else { throw RecorderError.cameraNotFound(name: name, available: devices.map(\.id)) }
        return match
    }
}
