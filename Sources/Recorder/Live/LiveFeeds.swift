import Capture
import Synchronization

/// Every configured camera's live view by name, for the web server. Each camera has one
/// `LiveOutput`, attached to its session whenever the camera records; a reload that keeps a
/// camera keeps its live output (and its viewers).
public final class LiveFeeds: Sendable {
    private let outputs = Mutex<[String: LiveOutput]>([:])

    public init() {}

    /// The camera's live view; nil for a camera not in the configuration.
    public func output(camera: String) -> LiveOutput? { outputs.withLock { $0[camera] } }

    /// Live viewers of all cameras.
    public var viewerCount: Int { outputs.withLock { $0.values.reduce(0) { $0 + $1.viewerCount } } }

    /// The cameras now configured (the recorder calls this as it plans and reloads them).
    public func replace(with current: [String: LiveOutput]) { outputs.withLock { $0 = current } }
}
