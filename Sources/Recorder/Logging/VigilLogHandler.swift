import Foundation
import Glibc
import Logging
import Plumbing

/// Where log lines go, which decides their shape.
public enum LogDestination: Sendable, Equatable {
    /// systemd's journal reads standard error: it stamps the time itself and takes the priority
    /// from a `<N>` prefix (sd-daemon(3)), so lines carry that and no timestamp.
    case journal
    /// A terminal, a file or a pipe: a timestamp, the level, the logger's label.
    case stream

    /// `$JOURNAL_STREAM` is "DEVICE:INODE" of the journal's stream, and counts only when standard
    /// error is still that stream (a child whose output was redirected inherits the variable).
    public static func detect(environment: [String: String], standardError: (device: UInt64, inode: UInt64)?) -> LogDestination {
        guard let value = environment["JOURNAL_STREAM"], let stderr = standardError else { return .stream }
        let parts = value.split(separator: ":").map { UInt64($0) }
        guard parts.count == 2, let device = parts[0], let inode = parts[1] else { return .stream }
        return device == stderr.device && inode == stderr.inode ? .journal : .stream
    }

    /// This process's destination.
    public static let current: LogDestination = {
        var st = stat()
        let identity = fstat(STDERR_FILENO, &st) == 0 ? (UInt64(st.st_dev), UInt64(st.st_ino)) : nil
        return detect(environment: ProcessInfo.processInfo.environment, standardError: identity)
    }()

    public var isJournal: Bool { self == .journal }
}

/// Vigil's log lines, on standard error, shaped for where they go (see `LogDestination`).
/// `--log-level` sets `logLevel` in both shapes.
public struct VigilLogHandler: LogHandler {
    public var logLevel: Logger.Level
    public var metadata: Logger.Metadata = [:]
    private let label: String
    private let destination: LogDestination

    public init(label: String, level: Logger.Level, destination: LogDestination = .current) {
        self.label = label
        logLevel = level
        self.destination = destination
    }

    public subscript(metadataKey key: String) -> Logger.Metadata.Value? {
        get { metadata[key] }
        set { metadata[key] = newValue }
    }

    public func log(event: LogEvent) {
        var merged = metadata
        if let extra = event.metadata { merged.merge(extra) { _, new in new } }
        Console.error(Self.line(
            level: event.level, label: label, message: "\(event.message)", metadata: merged, destination: destination, date: Date()))
    }

    /// One line: `<3>vigil.storage: message` for the journal, `2026-11-23T20:40:01+0000 error
    /// vigil.storage: message` elsewhere; metadata follows as `key=value`. A message of several
    /// lines keeps its prefix on each, so the journal gives each its priority.
    public static func line(
        level: Logger.Level, label: String, message: String, metadata: Logger.Metadata, destination: LogDestination, date: Date
    ) -> String {
        let tail = metadata.isEmpty ? "" : " " + metadata.sorted { $0.key < $1.key }.map { "\($0.key)=\($0.value)" }.joined(separator: " ")
        let prefix: String
        switch destination {
        case .journal: prefix = "<\(priority(level))>\(label): "
        case .stream: prefix = "\(timestamp(date)) \(level) \(label): "
        }
        return (message + tail).split(separator: "\n", omittingEmptySubsequences: false).map { prefix + $0 }.joined(separator: "\n") + "\n"
    }

    /// syslog(3) priorities, as sd-daemon(3) prefixes take them.
    public static func priority(_ level: Logger.Level) -> Int {
        switch level {
        case .trace, .debug: return 7
        case .info: return 6
        case .notice: return 5
        case .warning: return 4
        case .error: return 3
        case .critical: return 2
        }
    }

    private static func timestamp(_ date: Date) -> String {
        var time = time_t(date.timeIntervalSince1970)
        var parts = tm()
        localtime_r(&time, &parts)
        var buffer = [UInt8](repeating: 0, count: 32)
        let length = strftime(&buffer, buffer.count, "%Y-%m-%dT%H:%M:%S%z", &parts)
        return String(decoding: buffer[..<length], as: UTF8.self)
    }
}
