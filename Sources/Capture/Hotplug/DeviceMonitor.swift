import CV4L2
import Foundation
import Glibc
import Logging
import Synchronization

/// A video device node appeared or went away.
public enum DeviceChange: Sendable, Equatable, CustomStringConvertible {
    case connected(node: String)
    case disconnected(node: String)

    public var node: String {
        switch self {
        case .connected(let n), .disconnected(let n): return n
        }
    }

    public var description: String {
        switch self {
        case .connected(let n): return "\(n) connected"
        case .disconnected(let n): return "\(n) disconnected"
        }
    }
}

/// Watches for cameras being plugged in and out (AVFoundation's device connected/disconnected
/// notifications). Three sources, each a fallback for the one before: the kernel's uevent
/// netlink socket (what udev listens to), inotify on the device directory (containers without
/// netlink), and a rescan of the directory (when events were lost, or periodically when neither
/// source works). Runs on its own thread, asleep until something happens.
public final class DeviceMonitor: Sendable {
    public struct Configuration: Sendable {
        /// Where nodes appear (`/dev`); tests use a temporary directory.
        public var deviceDirectory: String
        public var useNetlink: Bool
        /// Seconds between full rescans when neither netlink nor inotify works.
        public var rescanInterval: Double

        public init(deviceDirectory: String = "/dev", useNetlink: Bool = true, rescanInterval: Double = 5) {
            self.deviceDirectory = deviceDirectory
            self.useNetlink = useNetlink
            self.rescanInterval = rescanInterval
        }
    }

    public let configuration: Configuration
    private let logger = Logger(label: "vigil.hotplug")

    public init(_ configuration: Configuration = Configuration()) {
        self.configuration = configuration
    }

    /// Device changes from now on. Each call starts its own watcher thread, which ends when the
    /// stream's consumer goes away. The event sources are open before this returns, so nothing
    /// plugged in after the call is missed.
    public func changes() -> AsyncStream<DeviceChange> {
        let (stream, continuation) = AsyncStream<DeviceChange>.makeStream(bufferingPolicy: .bufferingNewest(256))
        let stopped = StopFlag()
        continuation.onTermination = { _ in stopped.set() }
        let sources = EventSources(configuration, logger: logger)
        // "From now on": what is present at this call is the baseline, not an event.
        let present = Set(LinuxV4L2(deviceDirectory: configuration.deviceDirectory).videoNodes())
        let thread = Thread { [configuration] in
            Watcher(configuration: configuration, sources: sources, stopped: stopped, known: present) { continuation.yield($0) }.run()
            continuation.finish()
        }
        thread.name = "vigil-hotplug"
        thread.start()
        return stream
    }

    /// "video0" → true; "video0-meta", "v4l" → false.
    static func isVideoNode(_ name: Substring) -> Bool {
        name.hasPrefix("video") && name.count > 5 && name.dropFirst(5).allSatisfy(\.isNumber)
    }

    /// Parses one kernel uevent ("add@/devices/…\0ACTION=add\0SUBSYSTEM=video4linux\0DEVNAME=video0\0…").
    public static func parseUevent(_ bytes: UnsafeRawBufferPointer, deviceDirectory: String) -> DeviceChange? {
        var fields: [Substring: Substring] = [:]
        for part in bytes.split(separator: 0) {
            let text = Substring(decoding: part, as: UTF8.self)
            if let eq = text.firstIndex(of: "=") { fields[text[..<eq]] = text[text.index(after: eq)...] }
        }
        guard fields["SUBSYSTEM"] == "video4linux", let name = fields["DEVNAME"], let action = fields["ACTION"] else { return nil }
        let base = name.split(separator: "/").last ?? name
        guard isVideoNode(base) else { return nil }
        let node = "\(deviceDirectory)/\(base)"
        switch action {
        case "add": return .connected(node: node)
        case "remove": return .disconnected(node: node)
        default: return nil
        }
    }
}

/// Set once, from any thread, to end the watcher: a byte down its pipe wakes the watcher's
/// poll at once.
final class StopFlag: Sendable {
    private let value = Atomic<Bool>(false)
    private let pipe: (read: Int32, write: Int32)

    init() {
        var fds: [Int32] = [-1, -1]
        if Glibc.pipe(&fds) == 0 {
            for fd in fds {
                _ = fcntl(fd, F_SETFD, FD_CLOEXEC)
                _ = fcntl(fd, F_SETFL, O_NONBLOCK)
            }
        }
        pipe = (fds[0], fds[1])
    }

    deinit {
        if pipe.read >= 0 { close(pipe.read) }
        if pipe.write >= 0 { close(pipe.write) }
    }

    /// Readable once the flag is set.
    var fd: Int32 { pipe.read }

    func set() {
        value.store(true, ordering: .releasing)
        var byte: UInt8 = 1
        _ = write(pipe.write, &byte, 1)
    }

    var isSet: Bool { value.load(ordering: .acquiring) }
}

/// The kernel's uevent socket and an inotify watch on the device directory, opened by the
/// caller of `changes()` and owned (and closed) by the watcher thread after that.
struct EventSources: Sendable {
    var netlink: Int32 = -1
    var inotify: Int32 = -1

    init(_ configuration: DeviceMonitor.Configuration, logger: Logger) {
        let directory = configuration.deviceDirectory
        if configuration.useNetlink {
            netlink = cv4l2_open_uevent_socket()
            if netlink < 0 { logger.info("kernel uevents unavailable (\(String(cString: strerror(-netlink)))): watching \(directory) instead") }
        }
        inotify = inotify_init1(Int32(IN_CLOEXEC | IN_NONBLOCK))
        if inotify >= 0 {
            let mask = UInt32(IN_CREATE | IN_DELETE | IN_ATTRIB | IN_MOVED_TO | IN_MOVED_FROM)
            if inotify_add_watch(inotify, directory, mask) < 0 {
                logger.warning("cannot watch \(directory) (\(String(cString: strerror(errno)))): rescanning every \(configuration.rescanInterval) s")
                close(inotify)
                inotify = -1
            }
        }
    }

    /// With neither source, only a periodic rescan can see changes.
    var none: Bool { netlink < 0 && inotify < 0 }
}

/// The monitor's thread: sleeps in poll() on its event sources and the stop flag, reports
/// differences. The directory is rescanned when an event source overflowed (events were lost)
/// and, only when there is no event source at all, every `rescanInterval`.
private struct Watcher {
    let configuration: DeviceMonitor.Configuration
    let sources: EventSources
    let stopped: StopFlag
    var known: Set<String>
    let emit: (DeviceChange) -> Void

    func run() {
        let directory = configuration.deviceDirectory
        var known = self.known
        let (netlink, inotify) = (sources.netlink, sources.inotify)
        defer {
            if netlink >= 0 { close(netlink) }
            if inotify >= 0 { close(inotify) }
        }
        var buffer = [UInt8](repeating: 0, count: 8192)
        // Report a change only if the node set agrees, so the sources never double-report.
        func report(_ change: DeviceChange) {
            switch change {
            case .connected(let node):
                // udev may fix permissions after creating the node: report again on IN_ATTRIB.
                known.insert(node)
                emit(change)
            case .disconnected(let node):
                if known.remove(node) != nil { emit(change) }
            }
        }
        func rescan() {
            let present = Set(LinuxV4L2(deviceDirectory: directory).videoNodes())
            for node in present.subtracting(known).sorted() { report(.connected(node: node)) }
            for node in known.subtracting(present).sorted() { report(.disconnected(node: node)) }
        }
        let timeout = sources.none ? Int32(configuration.rescanInterval * 1000) : -1
        while !stopped.isSet {
            var fds = [pollfd(fd: netlink, events: Int16(POLLIN), revents: 0), pollfd(fd: inotify, events: Int16(POLLIN), revents: 0),
                       pollfd(fd: stopped.fd, events: Int16(POLLIN), revents: 0)]
            let ready = poll(&fds, 3, timeout)
            if ready == 0 {
                rescan()
                continue
            }
            var lost = false
            if netlink >= 0 && fds[0].revents & Int16(POLLIN) != 0 {
                while true {
                    let n = recv(netlink, &buffer, buffer.count, 0)
                    if n < 0 && errno == ENOBUFS { lost = true; continue }
                    if n <= 0 { break }
                    let change = buffer.withUnsafeBytes { DeviceMonitor.parseUevent(UnsafeRawBufferPointer(rebasing: $0[0..<n]), deviceDirectory: directory) }
                    if let change { report(change) }
                }
            }
            if inotify >= 0 && fds[1].revents & Int16(POLLIN) != 0 {
                while true {
                    let n = read(inotify, &buffer, buffer.count)
                    if n <= 0 { break }
                    var offset = 0
                    while offset + MemoryLayout<inotify_event>.size <= n {
                        let (mask, length) = buffer.withUnsafeBytes { raw -> (UInt32, Int) in
                            let e = raw.loadUnaligned(fromByteOffset: offset, as: inotify_event.self)
                            return (e.mask, Int(e.len))
                        }
                        let nameStart = offset + MemoryLayout<inotify_event>.size
                        let name = Substring(decoding: buffer[nameStart..<min(n, nameStart + length)].prefix { $0 != 0 }, as: UTF8.self)
                        offset = nameStart + length
                        if mask & UInt32(IN_Q_OVERFLOW) != 0 { lost = true }
                        guard DeviceMonitor.isVideoNode(name) else { continue }
                        let node = "\(directory)/\(name)"
                        if mask & UInt32(IN_DELETE | IN_MOVED_FROM) != 0 {
                            report(.disconnected(node: node))
                        } else {
                            report(.connected(node: node))
                        }
                    }
                }
            }
            if lost { rescan() }
        }
    }
}
