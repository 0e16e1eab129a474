import CV4L2
import Capture
import Foundation
import Glibc
import Media

/// An in-process stand-in for the kernel's V4L2 layer, behind the same syscall seam the real
/// backend uses. It honours the V4L2 structs and the buffer queue (REQBUFS/QUERYBUF/mmap/QBUF/
/// DQBUF/STREAMON/STREAMOFF), produces frames at the negotiated rate, and can be unplugged at any
/// moment: from then on every call fails with ENODEV and poll reports POLLERR|POLLHUP, as the
/// kernel does. File descriptors and buffer mappings are real (an eventfd per open, a shared
/// memory file per buffer), so leaks show up in /proc/self/fd and /proc/self/maps.
/// @unchecked: open files, cameras and mappings are guarded by `lock` (an NSCondition: blocking polls wait on it).
public final class EmulatedV4L2: V4L2System, @unchecked Sendable {
    private let lock = NSCondition()
    private var cameras: [EmulatedCamera] = []
    private var files: [Int32: OpenFile] = [:]
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
            if !on { for f in files.values where f.camera === camera && f.streaming { f.nextFrameDue = Capture.SystemClocks.monotonicNanos() + f.intervalNanos } }
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
    private func isHeldByAnother(_ file: OpenFile) -> Bool {
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

    public func open(_ path: String) -> Int32 {
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

    public func close(_ fd: Int32) {
        lock.withLock {
            guard let file = files.removeValue(forKey: fd) else { return }
            file.releaseBuffers()
            Glibc.close(fd)
        }
    }

    public func mmap(_ fd: Int32, length: Int, offset: Int) -> (address: UnsafeMutableRawPointer?, error: Int32) {
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

    public func munmap(_ address: UnsafeMutableRawPointer, length: Int) {
        lock.withLock {
            if mappings.removeValue(forKey: address) != nil { Glibc.munmap(address, length) }
        }
    }

    public func poll(_ fd: Int32, timeoutMilliseconds: Int32) -> (result: Int32, events: Int16) {
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
                wake = min(wake, Date(timeIntervalSinceNow: Double(due - Capture.SystemClocks.monotonicNanos()) / 1e9))
            }
            _ = lock.wait(until: max(wake, now.addingTimeInterval(0.0005)))
        }
    }

    public func videoNodes() -> [String] {
        lock.withLock { cameras.filter(\.isPlugged).map(\.node).sorted() }
    }

    public func stableNames() -> [String: String] {
        lock.withLock {
            var names: [String: String] = [:]
            for c in cameras where c.isPlugged && !c.isMetadataNode { if let s = c.stableName { names[c.node] = s } }
            return names
        }
    }

    public func ioctl(_ fd: Int32, _ request: UInt, _ argument: UnsafeMutableRawPointer) -> Int32 {
        lock.lock()
        defer { lock.unlock() }
        guard let file = files[fd] else { return -EBADF }
        let camera = file.camera
        guard camera.isPlugged else { return -ENODEV }
        switch request {
        case CV4L2_VIDIOC_QUERYCAP:
            let cap = argument.assumingMemoryBound(to: v4l2_capability.self)
            cap.pointee = v4l2_capability()
            Self.copy(camera.driver, into: &cap.pointee.driver)
            Self.copy(camera.card, into: &cap.pointee.card)
            Self.copy(camera.bus, into: &cap.pointee.bus_info)
            let own = camera.isMetadataNode ? UInt32(V4L2_CAP_META_CAPTURE) : UInt32(V4L2_CAP_VIDEO_CAPTURE)
            cap.pointee.device_caps = own | UInt32(V4L2_CAP_STREAMING)
            cap.pointee.capabilities = UInt32(V4L2_CAP_VIDEO_CAPTURE) | UInt32(V4L2_CAP_META_CAPTURE)
                | UInt32(V4L2_CAP_STREAMING) | UInt32(V4L2_CAP_DEVICE_CAPS)
            return 0
        case CV4L2_VIDIOC_ENUM_FMT:
            let d = argument.assumingMemoryBound(to: v4l2_fmtdesc.self)
            guard !camera.isMetadataNode, Int(d.pointee.index) < camera.formats.count else { return -EINVAL }
            let f = camera.formats[Int(d.pointee.index)]
            d.pointee.pixelformat = V4L2Discovery.fourcc(f.pixelFormat)
            d.pointee.flags = f.pixelFormat.isCompressed ? UInt32(V4L2_FMT_FLAG_COMPRESSED) : 0
            Self.copy(f.pixelFormat == .mjpeg ? "Motion-JPEG" : f.pixelFormat == .h264 ? "H.264" : "YUYV 4:2:2", into: &d.pointee.description)
            return 0
        case CV4L2_VIDIOC_ENUM_FRAMESIZES:
            let e = argument.assumingMemoryBound(to: v4l2_frmsizeenum.self)
            guard let f = camera.formats.first(where: { V4L2Discovery.fourcc($0.pixelFormat) == e.pointee.pixel_format }),
                  Int(e.pointee.index) < f.sizes.count else { return -EINVAL }
            e.pointee.type = V4L2_FRMSIZE_TYPE_DISCRETE.rawValue
            e.pointee.discrete.width = UInt32(f.sizes[Int(e.pointee.index)].width)
            e.pointee.discrete.height = UInt32(f.sizes[Int(e.pointee.index)].height)
            return 0
        case CV4L2_VIDIOC_ENUM_FRAMEINTERVALS:
            let e = argument.assumingMemoryBound(to: v4l2_frmivalenum.self)
            guard let f = camera.formats.first(where: { V4L2Discovery.fourcc($0.pixelFormat) == e.pointee.pixel_format }),
                  f.sizes.contains(where: { $0.width == e.pointee.width && $0.height == e.pointee.height }),
                  Int(e.pointee.index) < f.frameRates.count else { return -EINVAL }
            e.pointee.type = V4L2_FRMIVAL_TYPE_DISCRETE.rawValue
            e.pointee.discrete = v4l2_fract(numerator: 1000, denominator: UInt32(f.frameRates[Int(e.pointee.index)] * 1000))
            return 0
        case CV4L2_VIDIOC_G_FMT, CV4L2_VIDIOC_S_FMT:
            let f = argument.assumingMemoryBound(to: v4l2_format.self)
            guard f.pointee.type == V4L2_BUF_TYPE_VIDEO_CAPTURE.rawValue, !camera.isMetadataNode else { return -EINVAL }
            if request == CV4L2_VIDIOC_S_FMT {
                if !file.buffers.isEmpty || camera.isBusy || isHeldByAnother(file) { return -EBUSY }
                file.choose(width: Int(f.pointee.fmt.pix.width), height: Int(f.pointee.fmt.pix.height), fourcc: f.pointee.fmt.pix.pixelformat)
            }
            f.pointee.fmt.pix.width = UInt32(file.width)
            f.pointee.fmt.pix.height = UInt32(file.height)
            f.pointee.fmt.pix.pixelformat = V4L2Discovery.fourcc(file.pixelFormat)
            f.pointee.fmt.pix.field = V4L2_FIELD_NONE.rawValue
            f.pointee.fmt.pix.bytesperline = file.pixelFormat.isCompressed ? 0 : UInt32(file.width * 2)
            f.pointee.fmt.pix.sizeimage = UInt32(file.frameBytes)
            return 0
        case CV4L2_VIDIOC_G_PARM, CV4L2_VIDIOC_S_PARM:
            let p = argument.assumingMemoryBound(to: v4l2_streamparm.self)
            if request == CV4L2_VIDIOC_S_PARM {
                let t = p.pointee.parm.capture.timeperframe
                if t.numerator > 0 { file.chooseRate(Double(t.denominator) / Double(t.numerator)) }
            }
            p.pointee.parm.capture.capability = UInt32(V4L2_CAP_TIMEPERFRAME)
            p.pointee.parm.capture.timeperframe = v4l2_fract(numerator: 1000, denominator: UInt32(file.frameRate * 1000))
            return 0
        case CV4L2_VIDIOC_REQBUFS:
            let r = argument.assumingMemoryBound(to: v4l2_requestbuffers.self)
            guard r.pointee.memory == V4L2_MEMORY_MMAP.rawValue else { return -EINVAL }
            if file.streaming || ((camera.isBusy || isHeldByAnother(file)) && r.pointee.count > 0) { return -EBUSY }
            file.releaseBuffers()
            if r.pointee.count > 0 {
                let count = min(Int(r.pointee.count), 8)
                do { try file.allocateBuffers(count) } catch { file.releaseBuffers(); return -ENOMEM }
            }
            r.pointee.count = UInt32(file.buffers.count)
            return 0
        case CV4L2_VIDIOC_QUERYBUF:
            let b = argument.assumingMemoryBound(to: v4l2_buffer.self)
            guard Int(b.pointee.index) < file.buffers.count else { return -EINVAL }
            let buffer = file.buffers[Int(b.pointee.index)]
            b.pointee.length = UInt32(buffer.length)
            b.pointee.m.offset = UInt32(buffer.offset)
            b.pointee.flags = UInt32(V4L2_BUF_FLAG_MAPPED) | (buffer.state == .queued ? UInt32(V4L2_BUF_FLAG_QUEUED) : 0)
            return 0
        case CV4L2_VIDIOC_QBUF:
            let b = argument.assumingMemoryBound(to: v4l2_buffer.self)
            guard Int(b.pointee.index) < file.buffers.count, file.buffers[Int(b.pointee.index)].state == .dequeued else { return -EINVAL }
            file.buffers[Int(b.pointee.index)].state = .queued
            file.buffers[Int(b.pointee.index)].queuedAt = file.nextQueueTicket()
            return 0
        case CV4L2_VIDIOC_DQBUF:
            let b = argument.assumingMemoryBound(to: v4l2_buffer.self)
            produceDueFrames(file)
            if let failure = camera.dequeueFailure, file.dequeuedFrames >= failure.frames {
                camera.dequeueFailure = nil
                return -failure.errno
            }
            guard let i = file.oldestDone() else { return file.streaming ? -EAGAIN : -EINVAL }
            let buffer = file.buffers[i]
            file.buffers[i].state = .dequeued
            b.pointee.index = UInt32(i)
            b.pointee.bytesused = UInt32(buffer.bytesUsed)
            b.pointee.flags = buffer.flags | UInt32(V4L2_BUF_FLAG_TIMESTAMP_MONOTONIC)
            b.pointee.field = V4L2_FIELD_NONE.rawValue
            b.pointee.sequence = buffer.sequence
            b.pointee.timestamp = timeval(tv_sec: Int(buffer.timestampNanos / 1_000_000_000), tv_usec: Int(buffer.timestampNanos % 1_000_000_000 / 1000))
            b.pointee.length = UInt32(buffer.length)
            b.pointee.m.offset = UInt32(buffer.offset)
            file.dequeuedFrames += 1
            if buffer.isCorrupt { camera.corruptFramesDequeued += 1 }
            if let limit = camera.unplugAfterFrames, file.dequeuedFrames >= limit {
                camera.unplugAfterFrames = nil
                camera.isPlugged = false
                lock.broadcast()
            }
            return 0
        case CV4L2_VIDIOC_STREAMON:
            if let e = camera.streamOnError { return -e }
            guard !file.buffers.isEmpty else { return -EINVAL }
            file.prepareFrames()
            file.streaming = true
            camera.streamStarts += 1
            file.sequence = 0
            file.nextFrameDue = Capture.SystemClocks.monotonicNanos() + file.intervalNanos
            lock.broadcast()
            return 0
        case CV4L2_VIDIOC_STREAMOFF:
            file.streaming = false
            file.nextFrameDue = nil
            for i in file.buffers.indices { file.buffers[i].state = .dequeued }
            return 0
        case CV4L2_VIDIOC_QUERY_EXT_CTRL:
            let q = argument.assumingMemoryBound(to: v4l2_query_ext_ctrl.self)
            let wanted = q.pointee.id
            let next = wanted & CV4L2_CTRL_FLAG_NEXT_CTRL != 0
            let base = wanted & ~(CV4L2_CTRL_FLAG_NEXT_CTRL | CV4L2_CTRL_FLAG_NEXT_COMPOUND)
            let sorted = camera.controls.sorted { $0.id < $1.id }
            guard let c = next ? sorted.first(where: { $0.id > base }) : sorted.first(where: { $0.id == base }) else { return -EINVAL }
            q.pointee = v4l2_query_ext_ctrl()
            q.pointee.id = c.id
            q.pointee.type = c.type.rawValue
            Self.copy(c.name, into: &q.pointee.name)
            q.pointee.minimum = c.minimum
            q.pointee.maximum = c.maximum
            q.pointee.step = c.step
            q.pointee.default_value = c.defaultValue
            q.pointee.elem_size = 4
            q.pointee.elems = 1
            return 0
        case CV4L2_VIDIOC_QUERYMENU:
            let m = argument.assumingMemoryBound(to: v4l2_querymenu.self)
            let id = cv4l2_querymenu_id(m), index = Int64(cv4l2_querymenu_index(m))
            guard let c = camera.controls.first(where: { $0.id == id }), let name = c.menu[index] else { return -EINVAL }
            cv4l2_querymenu_set_name(m, name)
            return 0
        case CV4L2_VIDIOC_S_EXT_CTRLS, CV4L2_VIDIOC_G_EXT_CTRLS:
            let x = argument.assumingMemoryBound(to: v4l2_ext_controls.self)
            guard let list = x.pointee.controls else { return x.pointee.count == 0 ? 0 : -EINVAL }
            // Validate every control before changing any: the kernel applies all or none.
            for i in 0..<x.pointee.count {
                let c = cv4l2_ext_control_at(list, i)
                guard let spec = camera.controls.first(where: { $0.id == cv4l2_ext_control_id(c) }) else {
                    x.pointee.error_idx = i
                    return -EINVAL
                }
                if request == CV4L2_VIDIOC_S_EXT_CTRLS {
                    let v = Int64(cv4l2_ext_control_value(c))
                    if v < spec.minimum || v > spec.maximum || (spec.type == V4L2_CTRL_TYPE_MENU && spec.menu[v] == nil) {
                        x.pointee.error_idx = i
                        return -ERANGE
                    }
                }
            }
            for i in 0..<x.pointee.count {
                let c = cv4l2_ext_control_at(list, i)
                let id = cv4l2_ext_control_id(c)
                if request == CV4L2_VIDIOC_S_EXT_CTRLS {
                    file.controlValues[id] = Int64(cv4l2_ext_control_value(c))
                } else {
                    let value = file.controlValues[id] ?? camera.controls.first { $0.id == id }!.defaultValue
                    cv4l2_ext_control_set_value(c, Int32(value))
                }
            }
            return 0
        default:
            return -ENOTTY
        }
    }

    /// Control values last set on any open file of this camera's node (for tests).
    public func controlValue(_ id: UInt32, of camera: EmulatedCamera) -> Int64? {
        lock.withLock { files.values.first { $0.camera === camera }?.controlValues[id] }
    }

    // MARK: - Frame production

    /// Fills queued buffers with every frame whose time has come; frames due while no buffer
    /// is queued are lost, as with a real driver.
    private func produceDueFrames(_ file: OpenFile) {
        guard file.streaming, !file.camera.isWedged, var due = file.nextFrameDue else { return }
        let now = Capture.SystemClocks.monotonicNanos()
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

    static func copy<T>(_ string: String, into tuple: inout T) {
        withUnsafeMutableBytes(of: &tuple) { raw in
            raw.initializeMemory(as: UInt8.self, repeating: 0)
            let bytes = Array(string.utf8.prefix(raw.count - 1))
            raw.copyBytes(from: bytes)
        }
    }
}
