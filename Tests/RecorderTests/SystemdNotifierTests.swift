import Foundation
import Glibc
import Recorder
import Testing

/// A datagram socket standing in for systemd's notification socket.
final class NotifySocket {
    let fd: Int32
    let address: String

    /// `abstract`: in Linux's abstract namespace ("@name"), as systemd uses; else a file.
    init(abstract: Bool) throws {
        fd = socket(AF_UNIX, Int32(SOCK_DGRAM.rawValue), 0)
        let name = "vigil-notify-test-\(UUID().uuidString.prefix(8))"
        address = abstract ? "@\(name)" : NSTemporaryDirectory() + name
        var addr = sockaddr_un()
        addr.sun_family = sa_family_t(AF_UNIX)
        var bytes = Array(address.utf8)
        if abstract { bytes[0] = 0 }
        withUnsafeMutableBytes(of: &addr.sun_path) { $0.copyBytes(from: bytes) }
        let length = socklen_t(MemoryLayout<sa_family_t>.size + bytes.count + (abstract ? 0 : 1))
        let result = withUnsafePointer(to: &addr) { $0.withMemoryRebound(to: sockaddr.self, capacity: 1) { bind(fd, $0, length) } }
        guard result == 0 else { throw POSIXError(POSIXErrorCode(rawValue: errno)!) }
    }

    /// The next datagram, or nil after a second without one.
    func receive() -> String? {
        var p = pollfd(fd: fd, events: Int16(POLLIN), revents: 0)
        guard poll(&p, 1, 1000) == 1 else { return nil }
        var buffer = [UInt8](repeating: 0, count: 4096)
        let n = recv(fd, &buffer, buffer.count, 0)
        return n > 0 ? String(decoding: buffer[0..<n], as: UTF8.self) : nil
    }

    deinit {
        close(fd)
        if !address.hasPrefix("@") { unlink(address) }
    }
}

@Suite struct SystemdNotifierTests {
    @Test(arguments: [true, false])
    func statesReachTheNotifySocket(abstract: Bool) throws {
        let socket = try NotifySocket(abstract: abstract)
        let notifier = SystemdNotifier(environment: ["NOTIFY_SOCKET": socket.address, "WATCHDOG_USEC": "4000000"])
        #expect(notifier.isActive)
        #expect(notifier.watchdogInterval == 2)
        notifier.ready(status: "recording 2 camera(s)")
        #expect(socket.receive() == "READY=1\nSTATUS=recording 2 camera(s)")
        notifier.watchdog()
        #expect(socket.receive() == "WATCHDOG=1")
        notifier.reloading()
        #expect(socket.receive()?.hasPrefix("RELOADING=1\nMONOTONIC_USEC=") == true)
        notifier.stopping()
        #expect(socket.receive() == "STOPPING=1")
    }

    @Test func outsideSystemdNothingIsSentAndTheWatchdogIsOff() {
        let notifier = SystemdNotifier(environment: [:])
        #expect(!notifier.isActive)
        #expect(notifier.watchdogInterval == nil)
        notifier.ready(status: "x")
        // A watchdog meant for another process is not ours to pet.
        let other = SystemdNotifier(environment: ["NOTIFY_SOCKET": "@x", "WATCHDOG_USEC": "1000000", "WATCHDOG_PID": "1"])
        #expect(other.watchdogInterval == nil)
    }
}
