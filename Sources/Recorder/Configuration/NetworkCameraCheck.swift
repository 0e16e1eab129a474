import Capture
import Media

/// `vigil check-config` connects to each network camera and says what it sends. A wrong
/// password or path (401, 403, 404) is a mistake in the file: a problem at the camera's line.
/// A camera that is down, refuses or does not answer may simply be off now: a note, since
/// recording retries it.
public struct NetworkCameraCheck: Sendable {
    /// Per camera: what it sends, or why it could not be reached (lines to print).
    public var notes: [String] = []
    public var problems: [ConfigurationDiagnostic] = []

    /// No probe (`check-config --no-probe`).
    public init() {}

    /// Probes every network camera of `configuration`, one after another; each takes at most
    /// `connectSeconds` to answer and `listenSeconds` to show two keyframes.
    public init(_ configuration: Configuration, connectSeconds: Double = 5, listenSeconds: Double = 4) {
        let path = configuration.sourcePath ?? "configuration"
        for camera in configuration.cameras {
            guard case .url(let url) = camera.match else { continue }
            let settings = NetworkCamera.Settings(transport: camera.transport, connectTimeoutNanos: Int64(connectSeconds * 1e9))
            do {
                let probe = try NetworkProbe(url: url, settings: settings, listenNanos: Int64(listenSeconds * 1e9))
                notes.append("camera \(camera.name): " + probe.description)
                if !probe.isRecordable {
                    problems.append(ConfigurationDiagnostic(
                        path: path, line: camera.line, message: "camera \(camera.name) sends \(probe.codec), which Vigil cannot record without decoding",
                        fix: "set the camera to send H.264, H.265 or MJPEG"))
                }
            } catch {
                switch error.failure {
                case .unauthorized, .forbidden, .notFound:
                    problems.append(ConfigurationDiagnostic(
                        path: path, line: camera.line, message: "camera \(camera.name): \(error)",
                        fix: error.failure == .notFound ? "check the stream path in the url (the camera's manual names it)"
                            : "check the user in the url and the password (password_file, or the url)"))
                default:
                    notes.append("camera \(camera.name): note: cannot reach \(error) now; it is retried while recording")
                }
            }
        }
    }
}
