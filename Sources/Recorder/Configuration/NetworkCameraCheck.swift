import Capture
import Foundation
import Media
import Synchronization

/// `vigil check-config` connects to each network camera and says what it sends. A wrong
/// password or path (401, 403, 404) is a mistake in the file: a problem at the camera's line.
/// A camera that is down, refuses or does not answer may simply be off now: a note, since
/// recording retries it. Every probe ends within one deadline (`--timeout`, 10 s by default).
public struct NetworkCameraCheck: Sendable {
    /// Per camera: what it sends, or why it could not be reached (lines to print).
    public var notes: [String] = []
    public var problems: [ConfigurationDiagnostic] = []

    /// No probe (`check-config --no-probe`).
    public init() {}

    /// Probes every network camera of `configuration`, all at once (a thread each), so that the
    /// whole check takes `timeoutSeconds` at most however many cameras there are.
    public init(_ configuration: Configuration, timeoutSeconds: Int = NetworkProbe.defaultTimeoutSeconds) {
        let path = configuration.sourcePath ?? "configuration"
        let cameras = configuration.cameras.compactMap { camera -> (CameraConfig, String)? in
            guard case .url(let url) = camera.match else { return nil }
            return (camera, url)
        }
        let outcomes = Mutex([Result<NetworkProbe, NetworkError>?](repeating: nil, count: cameras.count))
        let group = DispatchGroup()
        for (index, (camera, url)) in cameras.enumerated() {
            group.enter()
            Thread.detachNewThread {
                let outcome = Result { () throws(NetworkError) in
                    try NetworkProbe(url: url, transport: camera.transport, timeoutNanos: Int64(timeoutSeconds) * 1_000_000_000)
                }
                outcomes.withLock { $0[index] = outcome }
                group.leave()
            }
        }
        group.wait()
        for ((camera, _), outcome) in zip(cameras, outcomes.withLock { $0 }) {
            switch outcome! {
            case .success(let probe):
                notes.append("camera \(camera.name): " + probe.description)
                if !probe.isRecordable {
                    problems.append(ConfigurationDiagnostic(
                        path: path, line: camera.line, message: "camera \(camera.name) sends \(probe.codec), which Vigil cannot record without decoding",
                        fix: "set the camera to send H.264, H.265 or MJPEG"))
                }
            case .failure(let error):
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
