import Foundation
import Glibc

/// A datagram socket standing in for systemd's notification socket (`$NOTIFY_SOCKET`).
public final class NotifySocket {
    private let fd: Int32
    /// The value for `NOTIFY_SOCKET`: a file path, or "@name" in Linux's abstract namespace.
    public let address: String

    /// `abstract`: in the abstract namespace, as systemd itself uses; else a file in `directory`.
    public init(abstract: Bool = false, directory: String = NSTemporaryDirectory()) throws {
        fd = socket(AF_UNIX, Int32(SOCK_DGRAM.rawValue) | Int32(SOCK_CLOEXEC.rawValue), 0)
        let name = "vigil-notify-\(UUID().uuidString.prefix(8))"
        address = abstract ? "@\(name)" : (directory as NSString).appendingPathComponent(name)
        var addr = sockaddr_un()
        addr.sun_family = sa_family_t(AF_UNIX)
        var bytes = Array(address.utf8)
        if abstract { bytes[0] = 0 }
        withUnsafeMutableBytes(of: &addr.sun_path) { $0.copyBytes(from: bytes) }
        let length = socklen_t(MemoryLayout<sa_family_t>.size + bytes.count + (abstract ? 0 : 1))
        let result = withUnsafePointer(to: &addr) { $0.withMemoryRebound(to: sockaddr.self, capacity: 1) { bind(fd, $0, length) } }
        guard result == 0 else {
            let e = errno
            close(fd)
            throw POSIXError(POSIXErrorCode(rawValue: e) ?? .EIO)
        }
    }

    /// The next message, or nil when none comes within `seconds`.
    public func receive(seconds: Double = 1) -> String? {
        var p = pollfd(fd: fd, events: Int16(POLLIN), revents: 0)
        guard poll(&p, 1, Int32(seconds * 1000)) == 1 else { return nil }
        var buffer = [UInt8](repeating: 0, count: 4096)
        let n = recv(fd, &buffer, buffer.count, 0)
        return n > 0 ? String(decoding: buffer[0..<n], as: UTF8.self) : nil
    }

    deinit {
        close(fd)
        if !address.hasPrefix("@") { unlink(address) }
    }
}
