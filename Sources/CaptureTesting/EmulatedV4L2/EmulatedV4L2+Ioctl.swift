import CV4L2
import Capture
import Glibc
import Plumbing

/// The emulated kernel's ioctls, as a UVC driver answers them: what the device is, its format,
/// its buffers and stream, its controls. Each runs with `lock` held.
extension EmulatedV4L2 {
    package func ioctl(_ fd: Int32, _ request: UInt, _ argument: UnsafeMutableRawPointer) -> Int32 {
        lock.lock()
        defer { lock.unlock() }
        guard let file = files[fd] else { return -EBADF }
        guard file.camera.isPlugged else { return -ENODEV }
        switch request {
        case CV4L2_VIDIOC_QUERYCAP, CV4L2_VIDIOC_ENUM_FMT, CV4L2_VIDIOC_ENUM_FRAMESIZES, CV4L2_VIDIOC_ENUM_FRAMEINTERVALS:
            return describeDevice(request, argument, file.camera)
        case CV4L2_VIDIOC_G_FMT, CV4L2_VIDIOC_S_FMT, CV4L2_VIDIOC_G_PARM, CV4L2_VIDIOC_S_PARM:
            return negotiateFormat(request, argument, file)
        case CV4L2_VIDIOC_REQBUFS, CV4L2_VIDIOC_QUERYBUF, CV4L2_VIDIOC_QBUF, CV4L2_VIDIOC_DQBUF, CV4L2_VIDIOC_STREAMON, CV4L2_VIDIOC_STREAMOFF:
            return stream(request, argument, file)
        case CV4L2_VIDIOC_QUERY_EXT_CTRL, CV4L2_VIDIOC_QUERYMENU, CV4L2_VIDIOC_S_EXT_CTRLS, CV4L2_VIDIOC_G_EXT_CTRLS:
            return controls(request, argument, file)
        default: return -ENOTTY
        }
    }

    /// The capability, formats, frame sizes and frame intervals the camera offers.
    private func describeDevice(_ request: UInt, _ argument: UnsafeMutableRawPointer, _ camera: EmulatedCamera) -> Int32 {
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
        default: return -ENOTTY
        }
    }

    /// The format and frame rate chosen (S) or in use (G); a format cannot change while buffers are held.
    private func negotiateFormat(_ request: UInt, _ argument: UnsafeMutableRawPointer, _ file: OpenFile) -> Int32 {
        let camera = file.camera
        switch request {
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
        default: return -ENOTTY
        }
    }

    /// Buffers requested, queued and dequeued, and streaming on and off.
    private func stream(_ request: UInt, _ argument: UnsafeMutableRawPointer, _ file: OpenFile) -> Int32 {
        let camera = file.camera
        switch request {
        case CV4L2_VIDIOC_STREAMOFF:
            file.streaming = false
            file.nextFrameDue = nil
            for i in file.buffers.indices { file.buffers[i].state = .dequeued }
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
            file.nextFrameDue = Plumbing.SystemClocks.monotonicNanos() + file.intervalNanos
            lock.broadcast()
            return 0
        default: return -ENOTTY
        }
    }

    /// The controls' descriptions and menus, and their values set (all or none) or read.
    private func controls(_ request: UInt, _ argument: UnsafeMutableRawPointer, _ file: OpenFile) -> Int32 {
        switch request {
        case CV4L2_VIDIOC_QUERY_EXT_CTRL:
            let q = argument.assumingMemoryBound(to: v4l2_query_ext_ctrl.self)
            let wanted = q.pointee.id
            let next = wanted & CV4L2_CTRL_FLAG_NEXT_CTRL != 0
            let base = wanted & ~(CV4L2_CTRL_FLAG_NEXT_CTRL | CV4L2_CTRL_FLAG_NEXT_COMPOUND)
            let sorted = file.camera.controls.sorted { $0.id < $1.id }
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
            guard let c = file.camera.controls.first(where: { $0.id == id }), let name = c.menu[index] else { return -EINVAL }
            cv4l2_querymenu_set_name(m, name)
            return 0
        case CV4L2_VIDIOC_S_EXT_CTRLS, CV4L2_VIDIOC_G_EXT_CTRLS:
            let x = argument.assumingMemoryBound(to: v4l2_ext_controls.self)
            guard let list = x.pointee.controls else { return x.pointee.count == 0 ? 0 : -EINVAL }
            // Validate every control before changing any: the kernel applies all or none.
            for i in 0..<x.pointee.count {
                let c = cv4l2_ext_control_at(list, i)
                guard let spec = file.camera.controls.first(where: { $0.id == cv4l2_ext_control_id(c) }) else {
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
                    let value = file.controlValues[id] ?? file.camera.controls.first { $0.id == id }!.defaultValue
                    cv4l2_ext_control_set_value(c, Int32(value))
                }
            }
            return 0
        default:
            return -ENOTTY
        }
    }

    static func copy<T>(_ string: String, into tuple: inout T) {
        withUnsafeMutableBytes(of: &tuple) { raw in
            raw.initializeMemory(as: UInt8.self, repeating: 0)
            let bytes = Array(string.utf8.prefix(raw.count - 1))
            raw.copyBytes(from: bytes)
        }
    }
}
