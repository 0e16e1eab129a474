import Capture
import Foundation
import Glibc
import Logging
import Plumbing

/// Speaks systemd's `sd_notify` protocol without libsystemd: one datagram per state change to
/// the socket named by `$NOTIFY_SOCKET` (`READY=1`, `RELOADING=1`, `STOPPING=1`, `STATUS=…`,
/// `WATCHDOG=1`). Outside systemd (`$NOTIFY_SOCKET` unset) every call does nothing.
public final class SystemdNotifier: Sendable {
    private let socketPath: String?
    /// Half of `$WATCHDOG_USEC` (when the watchdog is meant for this process), as systemd advises.
    public let watchdogInterval: Double?
    private let logger = Logger(label: "vigil.systemd")

    public init(environment: [String: String] = ProcessInfo.processInfo.environment) {
        socketPath = environment["NOTIFY_SOCKET"].flatMap { $0.isEmpty ? nil : $0 }
        let forUs = environment["WATCHDOG_PID"].map { Int32($0) == getpid() } ?? true
        if forUs, let usec = environment["WATCHDOG_USEC"].flatMap(Double.init), usec > 0 {
            watchdogInterval = usec / 2e6
        } else {
            watchdogInterval = nil
        }
    }

    public var isActive: Bool { socketPath != nil }

    public func ready(status: String) { send("READY=1\nSTATUS=\(status)") }
    public func reloading() { send("RELOADING=1\nMONOTONIC_USEC=\(SystemClocks.monotonicNanos() / 1000)") }
    public func stopping() { send("STOPPING=1") }
    public func status(_ text: String) { send("STATUS=\(text)") }
    public func watchdog() { send("WATCHDOG=1") }

    /// Sends one message; failures are logged, never fatal (systemd may be gone during shutdown).
    func send(_ message: String) {
        guard let path = socketPath else { return }
        let fd = socket(AF_UNIX, Int32(SOCK_DGRAM.rawValue) | Int32(SOCK_CLOEXEC.rawValue), 0)
        guard fd >= 0 else { return logger.warning("sd_notify: socket failed: \(String(cString: strerror(errno)))") }
        defer { close(fd) }
        var address = sockaddr_un()
        address.sun_family = sa_family_t(AF_UNIX)
        // "@name" is Linux's abstract namespace: a leading NUL byte and no terminator.
        var bytes = Array(path.utf8)
        if bytes.first == UInt8(ascii: "@") { bytes[0] = 0 }
        let capacity = MemoryLayout.size(ofValue: address.sun_path)
        guard bytes.count < capacity else { return logger.warning("sd_notify: socket path too long: \(path)") }
        withUnsafeMutableBytes(of: &address.sun_path) { raw in
            raw.copyBytes(from: bytes)
        }
        let length = socklen_t(MemoryLayout<sa_family_t>.size + bytes.count + (bytes.first == 0 ? 0 : 1))
        let sent = message.utf8CString.withUnsafeBufferPointer { text in
            withUnsafePointer(to: &address) {
                $0.withMemoryRebound(to: sockaddr.self, capacity: 1) {
                    sendto(fd, text.baseAddress, text.count - 1, Int32(MSG_NOSIGNAL), $0, length)
                }
            }
        }
        if sent < 0 { logger.warning("sd_notify to \(path) failed: \(String(cString: strerror(errno)))") }
    }
}
