import CV4L2
import CheckedMath
import Foundation
import Glibc
import Logging
import Media
import Plumbing
import RTSP
import SystemPackage

/// Opens a V4L2 node for capture.
public struct V4L2Camera: CaptureDeviceBackend {
    let system: any V4L2System
    let node: String

    public func open(format: DeviceFormat, frameRate: Double) throws -> any CaptureStream {
        try V4L2Stream(system: system, node: node, format: format, frameRate: frameRate)
    }
}

/// A streaming V4L2 camera: memory-mapped driver buffers, polled on the session's capture
/// thread. A frame shows its driver buffer itself (no copy) while enough other buffers stay
/// queued for the driver; the buffer is requeued when the outputs release the frame
/// (`BufferLender`). With too few left queued (slow outputs holding frames) a frame is copied
/// and its buffer requeued at once, as FFmpeg's v4l2.c does. Every path, errors included,
/// unmaps, frees the buffers and closes the node.
final class V4L2Stream: CaptureStream {
    private let system: any V4L2System
    private let node: String
    private let format: DeviceFormat
    private var fd: Int32 = -1
    private var buffers: [(address: UnsafeMutableRawPointer, length: Int)] = []
    private var streaming = false
    private(set) var maximumFrameBytes = 0
    /// Why the device is gone, found while giving a buffer back (ENODEV: it was removed).
    private var disconnected: String?
    /// H.264 cameras: the stream the frames belong to (parameter sets from the first keyframe).
    private var compressedStream: StreamDescription?
    private var parameterSets = ParameterSetTracker()
    private let logger = Logger(label: "vigil.v4l2")

    /// Six, not four: one buffer is held by the live view (the latest frame) and one or two by
    /// an encoder, and the driver should keep `minimumQueued` to fill.
    static let bufferCount: UInt32 = 6
    /// Buffers that stay queued for the driver: below this a frame is copied instead of lent.
    static let minimumQueued = 2
    private var lender: BufferLender?
    /// Buffers the driver holds (queued, or filled and not yet dequeued).
    private var queuedCount = 0
    private var returned: [UInt32] = []

    init(system: any V4L2System, node: String, format: DeviceFormat, frameRate: Double) throws {
        if format.pixelFormat.isVideoCodec {
            compressedStream = StreamDescription(videoCodec: format.pixelFormat, width: format.width, height: format.height)
        }
        self.system = system
        self.node = node
        self.format = format
        let fd = system.open(node)
        guard fd >= 0 else { throw CaptureError.deviceCall(call: "open", node: node, errno: Errno(rawValue: -fd)) }
        self.fd = fd
        do {
            try negotiate(frameRate: frameRate)
            try mapBuffers()
            for i in 0..<buffers.count { try queue(UInt32(i)) }
            let system = self.system, mapped = MappedBuffers(buffers)
            lender = BufferLender(buffers: buffers.count) {
                mapped.unmap(with: system)
            }
            var type = Int32(V4L2_BUF_TYPE_VIDEO_CAPTURE.rawValue)
            try call("VIDIOC_STREAMON", CV4L2_VIDIOC_STREAMON, &type)
            streaming = true
        } catch {
            close()
            throw error
        }
    }

    deinit { close() }

    @discardableResult
    private func call(_ name: String, _ request: UInt, _ argument: UnsafeMutableRawPointer) throws -> Int32 {
        let r = system.ioctl(fd, request, argument)
        if r < 0 { throw CaptureError.deviceCall(call: name, node: node, errno: Errno(rawValue: -r)) }
        return r
    }

    private func negotiate(frameRate: Double) throws {
        var f = v4l2_format()
        f.type = V4L2_BUF_TYPE_VIDEO_CAPTURE.rawValue
        f.fmt.pix.width = UInt32(format.width)
        f.fmt.pix.height = UInt32(format.height)
        f.fmt.pix.pixelformat = V4L2Discovery.fourcc(format.pixelFormat)
        f.fmt.pix.field = V4L2_FIELD_ANY.rawValue
        try call("VIDIOC_S_FMT", CV4L2_VIDIOC_S_FMT, &f)
        // The driver answers with what it really chose.
        let chosen = (Int(f.fmt.pix.width), Int(f.fmt.pix.height), V4L2Discovery.pixelFormat(f.fmt.pix.pixelformat))
        guard chosen.0 == format.width, chosen.1 == format.height, chosen.2 == format.pixelFormat else {
            throw CaptureError.deviceFailed(
                camera: node,
                reason: "asked for \(format.sizeDescription) \(format.pixelFormat), the driver chose \(chosen.0)x\(chosen.1) \(chosen.2.map { "\($0)" } ?? "an unsupported format")")
        }
        var p = v4l2_streamparm()
        p.type = V4L2_BUF_TYPE_VIDEO_CAPTURE.rawValue
        p.parm.capture.timeperframe = v4l2_fract(numerator: 1000, denominator: UInt32((frameRate * 1000).rounded()))
        if system.ioctl(fd, CV4L2_VIDIOC_S_PARM, &p) >= 0, p.parm.capture.timeperframe.numerator > 0 {
            let actual = Double(p.parm.capture.timeperframe.denominator) / Double(p.parm.capture.timeperframe.numerator)
            if abs(actual - frameRate) > 0.01 {
                logger.notice("\(node): asked for \(frameRate) fps, the driver chose \(actual) fps")
            }
        }
    }

    private func mapBuffers() throws {
        var req = v4l2_requestbuffers()
        req.count = Self.bufferCount
        req.type = V4L2_BUF_TYPE_VIDEO_CAPTURE.rawValue
        req.memory = V4L2_MEMORY_MMAP.rawValue
        try call("VIDIOC_REQBUFS", CV4L2_VIDIOC_REQBUFS, &req)
        guard req.count >= 2 else {
            throw CaptureError.deviceFailed(camera: node, reason: "the driver granted \(req.count) buffer(s); at least 2 are needed")
        }
        for i in 0..<req.count {
            var b = v4l2_buffer()
            b.index = i
            b.type = V4L2_BUF_TYPE_VIDEO_CAPTURE.rawValue
            b.memory = V4L2_MEMORY_MMAP.rawValue
            try call("VIDIOC_QUERYBUF", CV4L2_VIDIOC_QUERYBUF, &b)
            let (address, error) = system.mmap(fd, length: Int(b.length), offset: Int(b.m.offset))
            guard let address else { throw CaptureError.deviceCall(call: "mmap", node: node, errno: Errno(rawValue: -error)) }
            buffers.append((address, Int(b.length)))
            maximumFrameBytes = max(maximumFrameBytes, Int(b.length))
        }
    }

    private func queue(_ index: UInt32) throws {
        var b = v4l2_buffer()
        b.index = index
        b.type = V4L2_BUF_TYPE_VIDEO_CAPTURE.rawValue
        b.memory = V4L2_MEMORY_MMAP.rawValue
        try call("VIDIOC_QBUF", CV4L2_VIDIOC_QBUF, &b)
        queuedCount += 1
    }

    /// Requeues the buffers the outputs gave back since the last frame.
    private func requeueReturned() throws {
        guard let lender else { return }
        lender.takeReturned(into: &returned)
        for index in returned {
            if let q = queueBack(index) {
                if q.isDisconnect { disconnected = q.description } else { throw q }
            }
        }
    }

    func readFrame(into frame: CapturedFrame, timeoutNanos: Int64) throws -> ReadResult {
        try requeueReturned()
        if let disconnected { throw CaptureError.disconnected(reason: disconnected, cause: .unplugged) }
        let (ready, events) = system.poll(fd, timeoutMilliseconds: Int32(timeoutNanos / 1_000_000))
        if ready < 0 {
            if -ready == EINTR { return .timeout }
            throw CaptureError.deviceCall(call: "poll", node: node, errno: Errno(rawValue: -ready))
        }
        if events & Int16(POLLERR | POLLHUP) != 0 {
            // A hang-up is the kernel saying the device is gone; an error alone, that it stopped answering.
            // The hang-up's words are those of the ioctl path's ENODEV, so the log says the same
            // whichever path notices the unplug first.
            if events & Int16(POLLHUP) != 0 {
                throw CaptureError.disconnected(reason: "\(node): the camera was disconnected (poll: hang-up)", cause: .unplugged)
            }
            throw CaptureError.disconnected(reason: "\(node) stopped responding (poll reported an error): unplugged?", cause: .disconnected)
        }
        if ready == 0 { return .timeout }
        var b = v4l2_buffer()
        b.type = V4L2_BUF_TYPE_VIDEO_CAPTURE.rawValue
        b.memory = V4L2_MEMORY_MMAP.rawValue
        let r = system.ioctl(fd, CV4L2_VIDIOC_DQBUF, &b)
        if r < 0 {
            let error = CaptureError.deviceCall(call: "VIDIOC_DQBUF", node: node, errno: Errno(rawValue: -r))
            if -r == EAGAIN { return .timeout }
            if error.isDisconnect { throw CaptureError.disconnected(reason: error.description, cause: .unplugged) }
            throw error
        }
        queuedCount -= 1
        let result = take(b, into: frame)
        if frame.isLent { return result }
        // Copied (or dropped): the driver gets the buffer back at once for the next frame.
        let q = queueBack(b.index)
        if let q, q.isDisconnect { disconnected = q.description } else if let q { throw q }
        return result
    }

    private func queueBack(_ index: UInt32) -> CaptureError? {
        do { try queue(index) } catch let e as CaptureError { return e } catch { return nil }
        return nil
    }

    /// Lends the buffer to `frame`, or copies it when too few would stay queued.
    private func take(_ b: v4l2_buffer, into frame: CapturedFrame) -> ReadResult {
        guard Int(b.index) < buffers.count else { return .corrupt("driver returned unknown buffer \(b.index)") }
        if b.flags & UInt32(V4L2_BUF_FLAG_ERROR) != 0 { return .corrupt("the driver flagged the frame as damaged") }
        let used = Int(b.bytesused)
        if used == 0 { return .corrupt("empty frame") }
        let source = UnsafeRawBufferPointer(start: buffers[Int(b.index)].address, count: min(used, buffers[Int(b.index)].length))
        var keyframe = true
        if format.pixelFormat == .mjpeg {
            guard JPEGCheck.looksComplete(source) else { return .corrupt("truncated or corrupt MJPEG frame") }
        } else if format.pixelFormat.isVideoCodec {
            // UVC H.264: packets as they are; the first keyframe brings the SPS/PPS an MP4 header needs.
            keyframe = AnnexB.isKeyframe(source, hevc: format.pixelFormat == .hevc)
            if keyframe { compressedStream = parameterSets.update(compressedStream, keyframe: source, format: format.pixelFormat) }
        } else if let expected = format.pixelFormat.frameByteCount(width: format.width, height: format.height), used < expected {
            return .corrupt("short frame: \(used) of \(expected) bytes")
        }
        if let lender, queuedCount >= Self.minimumQueued {
            frame.lend(source, from: lender, index: b.index)
            lender.lend()
        } else {
            guard frame.reserve(source.count) else { return .corrupt("no memory for a \(source.count)-byte frame") }
            frame.storage.copyMemory(from: source)
        }
        // V4L2 timestamps are CLOCK_MONOTONIC; the wall time is derived from the same instant.
        let monotonic = Nanoseconds.from(seconds: Int64(b.timestamp.tv_sec))
            .flatMap { $0.adding(Int64(b.timestamp.tv_usec).scaled(by: 1000, over: 1) ?? .max) } ?? 0
        let nowMonotonic = SystemClocks.monotonicNanos()
        let stamped = monotonic > 0 && monotonic <= nowMonotonic ? monotonic : nowMonotonic
        frame.setContents(
            byteCount: source.count, format: format.pixelFormat, width: format.width, height: format.height,
            sequence: UInt64(b.sequence), monotonicNanos: stamped,
            wallNanos: SystemClocks.wallNanos() - (nowMonotonic - stamped),
            keyframe: keyframe, stream: compressedStream)
        return .frame
    }

    func apply(controls: [ControlSetting]) throws {
        guard !controls.isEmpty else { return }
        let size = cv4l2_ext_control_size()
        let storage = UnsafeMutableRawPointer.allocate(byteCount: size * controls.count, alignment: 8)
        defer { storage.deallocate() }
        let base = storage.assumingMemoryBound(to: v4l2_ext_control.self)
        for (i, c) in controls.enumerated() {
            cv4l2_ext_control_set(cv4l2_ext_control_at(base, UInt32(i)), c.id, Int32(clamping: c.value))
        }
        var request = v4l2_ext_controls()
        request.which = CV4L2_CTRL_WHICH_CUR_VAL
        request.count = UInt32(controls.count)
        request.controls = base
        let r = system.ioctl(fd, CV4L2_VIDIOC_S_EXT_CTRLS, &request)
        if r < 0 {
            let failed = Int(request.error_idx) < controls.count ? " (\(controls[Int(request.error_idx)].key))" : ""
            throw CaptureError.deviceCall(call: "VIDIOC_S_EXT_CTRLS\(failed)", node: node, errno: Errno(rawValue: -r))
        }
    }

    func close() {
        guard fd >= 0 else { return }
        if streaming {
            var type = Int32(V4L2_BUF_TYPE_VIDEO_CAPTURE.rawValue)
            _ = system.ioctl(fd, CV4L2_VIDIOC_STREAMOFF, &type)
            streaming = false
        }
        // Lent buffers stay mapped until their frames are released.
        if let lender {
            lender.close()
            self.lender = nil
        } else {
            for b in buffers { system.munmap(b.address, length: b.length) }
        }
        if !buffers.isEmpty {
            var req = v4l2_requestbuffers()
            req.count = 0
            req.type = V4L2_BUF_TYPE_VIDEO_CAPTURE.rawValue
            req.memory = V4L2_MEMORY_MMAP.rawValue
            _ = system.ioctl(fd, CV4L2_VIDIOC_REQBUFS, &req)
        }
        buffers.removeAll()
        system.close(fd)
        fd = -1
    }
}

/// The mapped driver buffers, for unmapping from whichever thread releases the last lent frame.
/// Kept as plain addresses (numbers, so Sendable): nothing reads through them, they are only
/// passed to `munmap`, once.
private struct MappedBuffers: Sendable {
    private let buffers: [(address: UInt, length: Int)]
    init(_ buffers: [(address: UnsafeMutableRawPointer, length: Int)]) {
        self.buffers = buffers.map { (UInt(bitPattern: $0.address), $0.length) }
    }

    func unmap(with system: any V4L2System) {
        for b in buffers {
            if let address = UnsafeMutableRawPointer(bitPattern: b.address) { system.munmap(address, length: b.length) }
        }
    }
}
