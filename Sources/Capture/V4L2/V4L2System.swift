import CV4L2
import Foundation
import Glibc

/// The syscalls a V4L2 camera is driven through. The real kernel sits behind `LinuxV4L2`;
/// tests put an emulated device in the same place. Results ≥ 0 mean success, negative
/// results are `-errno`, exactly as the kernel reports them. `package`: its raw ioctl pointers
/// stay inside Vigil (Capture, and CaptureTesting's emulated kernel), out of the public API.
package protocol V4L2System: Sendable {
    /// Opens a node non-blocking for streaming.
    func open(_ path: String) -> Int32
    func close(_ fd: Int32)
    func ioctl(_ fd: Int32, _ request: UInt, _ argument: UnsafeMutableRawPointer) -> Int32
    /// Maps a driver buffer into memory; nil with `-errno` on failure.
    func mmap(_ fd: Int32, length: Int, offset: Int) -> (address: UnsafeMutableRawPointer?, error: Int32)
    func munmap(_ address: UnsafeMutableRawPointer, length: Int)
    /// Waits for a frame; returns the poll result (or `-errno`) and the returned events.
    func poll(_ fd: Int32, timeoutMilliseconds: Int32) -> (result: Int32, events: Int16)
    /// The video device nodes present now (`/dev/video*`).
    func videoNodes() -> [String]
    /// Stable names pointing at nodes (`/dev/v4l/by-id/…`), keyed by the node they resolve to.
    func stableNames() -> [String: String]
}

/// The real kernel.
public struct LinuxV4L2: V4L2System {
    /// Where device nodes live (`/dev`); configurable so tools can look elsewhere.
    public let deviceDirectory: String

    public init(deviceDirectory: String = "/dev") {
        self.deviceDirectory = deviceDirectory
    }

    package func open(_ path: String) -> Int32 {
        let fd = Glibc.open(path, O_RDWR | O_NONBLOCK | O_CLOEXEC)
        return fd >= 0 ? fd : -errno
    }

    package func close(_ fd: Int32) { _ = Glibc.close(fd) }

    package func ioctl(_ fd: Int32, _ request: UInt, _ argument: UnsafeMutableRawPointer) -> Int32 {
        while true {
            let r = cv4l2_ioctl(fd, request, argument)
            if r >= 0 { return r }
            if errno != EINTR { return -errno }
        }
    }

    package func mmap(_ fd: Int32, length: Int, offset: Int) -> (address: UnsafeMutableRawPointer?, error: Int32) {
        let p = Glibc.mmap(nil, length, PROT_READ | PROT_WRITE, MAP_SHARED, fd, off_t(offset))
        if p == MAP_FAILED { return (nil, -errno) }
        return (p, 0)
    }

    package func munmap(_ address: UnsafeMutableRawPointer, length: Int) { _ = Glibc.munmap(address, length) }

    package func poll(_ fd: Int32, timeoutMilliseconds: Int32) -> (result: Int32, events: Int16) {
        var p = pollfd(fd: fd, events: Int16(POLLIN), revents: 0)
        let r = Glibc.poll(&p, 1, timeoutMilliseconds)
        return (r >= 0 ? r : -errno, p.revents)
    }

    public func videoNodes() -> [String] {
        let names = (try? FileManager.default.contentsOfDirectory(atPath: deviceDirectory)) ?? []
        return names.filter { $0.hasPrefix("video") && Int($0.dropFirst(5)) != nil }
            .sorted { Int($0.dropFirst(5))! < Int($1.dropFirst(5))! }
            .map { "\(deviceDirectory)/\($0)" }
    }

    public func stableNames() -> [String: String] {
        let dir = "\(deviceDirectory)/v4l/by-id"
        var result: [String: String] = [:]
        for name in (try? FileManager.default.contentsOfDirectory(atPath: dir)) ?? [] {
            guard let target = try? FileManager.default.destinationOfSymbolicLink(atPath: "\(dir)/\(name)") else { continue }
            let node = target.hasPrefix("/") ? target : URL(fileURLWithPath: "\(dir)/\(target)").standardized.path
            // A camera has one by-id link per node; keep the first (index0) name seen.
            if result[node] == nil || name < result[node]! { result[node] = name }
        }
        return result
    }
}
