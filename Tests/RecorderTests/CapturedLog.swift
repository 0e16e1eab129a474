import Logging
import Synchronization

/// Every log message of this test process at level warning and above, so that a test can assert
/// a warning the recorder gives only in its log. swift-log allows one bootstrap per process:
/// `shared` does it once, the first time a test needs it; loggers made before that keep the
/// default handler and are not captured.
final class CapturedLog: Sendable {
    struct Line: Sendable {
        let label: String
        let level: Logger.Level
        let message: String
    }

    static let shared: CapturedLog = {
        let log = CapturedLog()
        LoggingSystem.bootstrap { label in Handler(label: label, log: log) }
        return log
    }()

    private let lines = Mutex<[Line]>([])

    func append(_ line: Line) { lines.withLock { $0.append(line) } }

    /// Messages at `level` that contain `text`.
    func messages(_ level: Logger.Level, containing text: String) -> [String] {
        lines.withLock { $0.filter { $0.level == level && $0.message.contains(text) }.map(\.message) }
    }

    private struct Handler: LogHandler {
        let label: String
        let log: CapturedLog
        var logLevel: Logger.Level = .warning
        var metadata: Logger.Metadata = [:]

        subscript(metadataKey key: String) -> Logger.Metadata.Value? {
            get { metadata[key] }
            set { metadata[key] = newValue }
        }

        func log(event: LogEvent) {
            log.append(Line(label: label, level: event.level, message: event.message.description))
        }
    }
}
