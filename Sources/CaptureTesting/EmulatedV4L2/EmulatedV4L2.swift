import CV4L2
import Capture
import Foundation
import Glibc
import Media
import Plumbing

/// An in-process stand-in for the kernel's V4L2 layer, behind the same syscall seam the real
/// backend uses. It honours the V4L2 structs and the buffer queue (REQBUFS/QUERYBUF/mmap/QBUF/
/// DQBUF/STREAMON/STREAMOFF), produces frames at the negotiated rate, and can be unplugged at any
/// moment: from then on every call fails with ENODEV and poll reports POLLERR|POLLHUP, as the
/// kernel does. File descriptors and buffer mappings are real (an eventfd per open, a shared
/// memory file per buffer), so leaks show up in /proc/self/fd and /proc/self/maps.
/// @unchecked: open files, cameras and mappings are guarded by `lock` (an NSCondition: blocking polls wait on it).
public final class EmulatedV4L2: V4L2System, @unchecked Sendable {
    let lock = NSCondition()
    private var cameras: [EmulatedCamera] = []
    var files: [Int32: OpenFile] = [:]
    private var mappings: [UnsafeMutableRawPointer: Int] = [:]
    /// CPU time spent producing frames (painting, encoding, copying): the emulator's own cost,
    /// which benchmarks subtract.
    public private(set) var productionCPUNanos: Int64 = 0

    /// Names this emulator's descriptors and mappings, so a test can find exactly its own in /proc.
    let instanceName = "vigil-emulated-v4l2-\(UUID().uuidString.prefix(8))"
    private let nodeFile: String

    public init(_ cameras: [EmulatedCamera] = []) {
        self.cameras = cameras
        nodeFile = "/dev/shm/\(instanceName)-node"
        _ = FileManager.default.createFile(atPath: nodeFile, contents: nil)
    }

    deinit { unlink(nodeFile) }

    /// This emulator's descriptors and mappings as the real kernel sees them in /proc/self:
    /// both return to zero when every stream was closed properly.
    public func liveKernelResources() -> (fds: Int, mappings: Int) {
        let fdDir = "/proc/self/fd"
        let fds = ((try? FileManager.default.contentsOfDirectory(atPath: fdDir)) ?? []).filter {
            ((try? FileManager.default.destinationOfSymbolicLink(atPath: "\(fdDir)/\($0)")) ?? "").contains(instanceName)
        }.count
        // /proc files report a size of 0: read them to the end rather than by their size.
        let maps = String(decoding: FileHandle(forReadingAtPath: "/proc/self/maps")?.readDataToEndOfFile() ?? Data(), as: UTF8.self)
        return (fds, maps.split(separator: "\n").filter { $0.contains(instanceName) }.count)
    }

    public func add(_ camera: EmulatedCamera) { lock.withLock { cameras.append(camera) } }

    /// Unplugs a camera: open files fail from now on, waiting polls wake up with POLLHUP.
    public func unplug(_ camera: EmulatedCamera) {
        lock.withLock {
            camera.isPlugged = false
            lock.broadcast()
        }
    }

    /// Makes `poll` on the camera's open files report `events` (nil: normal again).
    public func reportOnPoll(_ camera: EmulatedCamera, _ events: Int16?) {
        lock.withLock {
            camera.pollFault = events
            lock.broadcast()
        }
    }

    /// How many frames broken by `camera`'s `corruption` a reader has dequeued so far.
    public func corruptFrames(of camera: EmulatedCamera) -> Int {
        lock.withLock { camera.corruptFramesDequeued }
    }

    /// Stops (or resumes) a camera's frames without closing anything.
    public func wedge(_ camera: EmulatedCamera, _ on: Bool) {
        lock.withLock {
            camera.isWedged = on
            // A resumed camera restarts its clock instead of bursting the missed frames.
            if !on { for f in files.values where f.camera === camera && f.streaming { f.nextFrameDue = Plumbing.SystemClocks.monotonicNanos() + f.intervalNanos } }
            lock.broadcast()
        }
    }

    /// Plugs a camera back in, optionally as another node (renumbered).
    public func replug(_ camera: EmulatedCamera, node: String? = nil) {
        lock.withLock {
            if let node { camera.node = node }
            camera.isPlugged = true
        }
    }

    /// Open emulated files and live buffer mappings (both should return to zero after close).
    public var openFileCount: Int { lock.withLock { files.count } }

    /// Like uvcvideo: once one open file of a camera has buffers, the camera is that file's until
    /// it releases them; any other gets EBUSY. (Called with the lock held.)
    func isHeldByAnother(_ file: OpenFile) -> Bool {
        files.values.contains { $0 !== file && $0.camera === file.camera && !$0.buffers.isEmpty }
    }
    public var mappingCount: Int { lock.withLock { mappings.count } }

    /// Whether `bytes` lie inside a driver buffer as mapped by the reader (a frame shown without
    /// a copy), rather than in memory of the reader's own.
    public func isInMappedBuffer(_ bytes: UnsafeRawBufferPointer) -> Bool {
        guard let start = bytes.baseAddress else { return false }
        return lock.withLock {
            mappings.contains { address, length in
                start >= UnsafeRawPointer(address) && start + bytes.count <= UnsafeRawPointer(address) + length
            }
        }
    }

    // MARK: - Syscalls

    package func open(_ path: String) -> Int32 {
        lock.withLock {
            guard let camera = cameras.first(where: { $0.node == path && $0.isPlugged }) else { return -ENOENT }
            if let e = camera.openError { return -e }
            // A real descriptor stands for the open node, so fd leaks show in /proc/self/fd.
            let fd = Glibc.open(nodeFile, O_RDONLY | O_CLOEXEC)
            guard fd >= 0 else { return -errno }
            files[fd] = OpenFile(camera: camera, memoryPrefix: "/dev/shm/\(instanceName)")
            return fd
        }
    }

    package func close(_ fd: Int32) {
        lock.withLock {
            guard let file = files.removeValue(forKey: fd) else { return }
            file.releaseBuffers()
            Glibc.close(fd)
        }
    }

    package func mmap(_ fd: Int32, length: Int, offset: Int) -> (address: UnsafeMutableRawPointer?, error: Int32) {
        lock.withLock {
            guard let file = files[fd] else { return (nil, -EBADF) }
            guard file.camera.isPlugged else { return (nil, -ENODEV) }
            guard let buffer = file.buffers.first(where: { $0.offset == offset }), length <= buffer.length else { return (nil, -EINVAL) }
            let p = Glibc.mmap(nil, length, PROT_READ | PROT_WRITE, MAP_SHARED, buffer.memoryFD, 0)
            guard let p, p != MAP_FAILED else { return (nil, -errno) }
            mappings[p] = length
            return (p, 0)
        }
    }

    package func munmap(_ address: UnsafeMutableRawPointer, length: Int) {
        lock.withLock {
            if mappings.removeValue(forKey: address) != nil { Glibc.munmap(address, length) }
        }
    }

    package func poll(_ fd: Int32, timeoutMilliseconds: Int32) -> (result: Int32, events: Int16) {
        lock.lock()
        defer { lock.unlock() }
        let deadline = Date().addingTimeInterval(Double(max(0, timeoutMilliseconds)) / 1000)
        while true {
            guard let file = files[fd] else { return (-EBADF, 0) }
            if !file.camera.isPlugged { return (1, Int16(POLLERR | POLLHUP)) }
            if let fault = file.camera.pollFault { return (1, fault) }
            produceDueFrames(file)
            if file.buffers.contains(where: { $0.state == .done }) { return (1, Int16(POLLIN)) }
            let now = Date()
            if now >= deadline { return (0, 0) }
            var wake = deadline
            if file.streaming, let due = file.nextFrameDue {
                wake = min(wake, Date(timeIntervalSinceNow: Double(due - Plumbing.SystemClocks.monotonicNanos()) / 1e9))
            }
            _ = lock.wait(until: max(wake, now.addingTimeInterval(0.0005)))
        }
    }

    package func videoNodes() -> [String] {
        lock.withLock { cameras.filter(\.isPlugged).map(\.node).sorted() }
    }

    package func stableNames() -> [String: String] {
        lock.withLock {
            var names: [String: String] = [:]
            for c in cameras where c.isPlugged && !c.isMetadataNode { if let s = c.stableName { names[c.node] = s } }
            return names
        }
    }

    /// Control values last set on any open file of this camera's node (for tests).
    public func controlValue(_ id: UInt32, of camera: EmulatedCamera) -> Int64? {
        lock.withLock { files.values.first { $0.camera === camera }?.controlValues[id] }
    }

    // MARK: - Frame production

    /// Fills queued buffers with every frame whose time has come; frames due while no buffer
    /// is queued are lost, as with a real driver.
    func produceDueFrames(_ file: OpenFile) {
        guard file.streaming, !file.camera.isWedged, var due = file.nextFrameDue else { return }
        let now = Plumbing.SystemClocks.monotonicNanos()
        // After a long stall start afresh instead of delivering a burst.
        if now - due > 1_000_000_000 { due = now }
        let started = Self.threadCPUNanos()
        while due <= now {
            if let i = file.oldestQueued() {
                file.fill(i, timestampNanos: due)
            } else {
                file.camera.framesProduced += 1
            }
            file.sequence &+= 1
            due += file.intervalNanos
        }
        file.nextFrameDue = due
        productionCPUNanos += Self.threadCPUNanos() - started
    }

    static func threadCPUNanos() -> Int64 {
        var ts = timespec()
        clock_gettime(CLOCK_THREAD_CPUTIME_ID, &ts)
        return Int64(ts.tv_sec) * 1_000_000_000 + Int64(ts.tv_nsec)
    }
}
