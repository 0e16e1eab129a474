import CV4L2
import Capture
import Foundation
import Glibc
import Media
import Plumbing

/// The driver-side state of one open emulated node: negotiated format, buffers and their queue.
final class OpenFile {
    enum BufferState { case dequeued, queued, done }

    struct Buffer {
        let memoryFD: Int32
        let kernelView: UnsafeMutableRawPointer
        let length: Int
        let offset: Int
        var state: BufferState = .dequeued
        var queuedAt: UInt64 = 0
        var bytesUsed = 0
        var flags: UInt32 = 0
        var sequence: UInt32 = 0
        /// Broken on purpose by the camera's `corruption`.
        var isCorrupt = false
        var timestampNanos: Int64 = 0
    }

    let camera: EmulatedCamera
    var pixelFormat: PixelFormat
    var width: Int
    var height: Int
    var frameRate: Double
    var buffers: [Buffer] = []
    var streaming = false
    var sequence: UInt32 = 0
    var nextFrameDue: Int64?
    var dequeuedFrames = 0
    var controlValues: [UInt32: Int64] = [:]
    private var ticket: UInt64 = 0
    private var painterCache: (painter: PatternPainter, yuyv: UnsafeMutableRawBufferPointer, jpeg: JPEGEncoder, picture: Picture, scaler: Scaler)?
    private var precomputed: [Data] = []
    private var h264Frames: [Data] = []

    /// Path prefix of the shared-memory files backing the buffers.
    private let memoryPrefix: String

    init(camera: EmulatedCamera, memoryPrefix: String) {
        self.camera = camera
        self.memoryPrefix = memoryPrefix
        let first = camera.formats.first
        pixelFormat = first?.pixelFormat ?? .yuyv422
        width = first?.sizes.first?.width ?? 640
        height = first?.sizes.first?.height ?? 480
        frameRate = first?.frameRates.first ?? 30
    }

    deinit {
        releaseBuffers()
        painterCache?.yuyv.deallocate()
    }

    var intervalNanos: Int64 { Int64(1_000_000_000 / frameRate) }

    /// A buffer big enough for any frame of this format (MJPEG frames vary in size).
    var frameBytes: Int { pixelFormat.isCompressed ? width * height * 2 + 65536 : width * height * 2 }

    func nextQueueTicket() -> UInt64 {
        ticket += 1
        return ticket
    }

    /// Picks the closest supported format, as drivers do for S_FMT.
    func choose(width w: Int, height h: Int, fourcc: UInt32) {
        let format = camera.formats.first { V4L2Discovery.fourcc($0.pixelFormat) == fourcc } ?? camera.formats[0]
        let size = format.sizes.min { abs($0.width * $0.height - w * h) < abs($1.width * $1.height - w * h) }!
        pixelFormat = format.pixelFormat
        width = size.width
        height = size.height
        chooseRate(frameRate)
        painterCache?.yuyv.deallocate()
        painterCache = nil
        precomputed = []
    }

    func chooseRate(_ wanted: Double) {
        let rates = camera.formats.first { $0.pixelFormat == pixelFormat }?.frameRates ?? [30]
        frameRate = rates.min { abs($0 - wanted) < abs($1 - wanted) }!
    }

    func allocateBuffers(_ count: Int) throws {
        let page = Int(sysconf(Int32(_SC_PAGESIZE)))
        let length = (frameBytes + page - 1) / page * page
        for i in 0..<count {
            var template = Array("\(memoryPrefix)-buffer-XXXXXX".utf8CString)
            let fd = mkstemp(&template)
            guard fd >= 0 else { throw POSIXErrorCode(rawValue: errno).map { POSIXError($0) } ?? CocoaError(.fileWriteUnknown) }
            unlink(&template)
            guard ftruncate(fd, off_t(length)) == 0, let view = Glibc.mmap(nil, length, PROT_READ | PROT_WRITE, MAP_SHARED, fd, 0), view != MAP_FAILED else {
                Glibc.close(fd)
                throw CocoaError(.fileWriteUnknown)
            }
            buffers.append(Buffer(memoryFD: fd, kernelView: view, length: length, offset: i * length))
        }
    }

    func releaseBuffers() {
        for b in buffers {
            Glibc.munmap(b.kernelView, b.length)
            Glibc.close(b.memoryFD)
        }
        buffers.removeAll()
        streaming = false
        nextFrameDue = nil
    }

    func oldestQueued() -> Int? {
        buffers.indices.filter { buffers[$0].state == .queued }.min { buffers[$0].queuedAt < buffers[$1].queuedAt }
    }

    func oldestDone() -> Int? {
        buffers.indices.filter { buffers[$0].state == .done }.min { buffers[$0].queuedAt < buffers[$1].queuedAt }
    }

    /// Paints the next frame into buffer `i` and marks it done.
    func fill(_ i: Int, timestampNanos: Int64) {
        let number = camera.framesProduced
        camera.framesProduced += 1
        var used = paint(number, into: buffers[i].kernelView, capacity: buffers[i].length)
        var flags: UInt32 = 0
        let isCorrupt = camera.corruption.map { $0.every > 0 && (number + 1) % UInt64($0.every) == 0 } ?? false
        if isCorrupt, let corruption = camera.corruption {
            switch corruption.kind {
            case .errorFlag: flags |= UInt32(V4L2_BUF_FLAG_ERROR)
            case .empty: used = 0
            case .truncatedJPEG: used = max(0, used / 2)
            }
        }
        buffers[i].bytesUsed = used
        buffers[i].flags = flags
        buffers[i].isCorrupt = isCorrupt
        buffers[i].sequence = sequence
        buffers[i].timestampNanos = timestampNanos
        buffers[i].state = .done
    }

    /// Encodes the frames a camera sends precomputed (H.264, or MJPEG with `precomputedFrames`)
    /// before streaming starts: made on the first frame instead, the work (a second or more in a
    /// debug build on a busy machine) would make the camera drop the frames due meanwhile.
    func prepareFrames() {
        if pixelFormat == .h264 {
            _ = h264Frame(0)
        } else if pixelFormat == .mjpeg && camera.precomputedFrames > 0 && precomputed.isEmpty {
            let wall = Plumbing.SystemClocks.wallNanos()
            precomputed = (0..<UInt64(camera.precomputedFrames)).map { encodeJPEG($0, wall: wall, noisy: true) }
        }
    }

    private func paint(_ number: UInt64, into target: UnsafeMutableRawPointer, capacity: Int) -> Int {
        let wall = Plumbing.SystemClocks.wallNanos()
        if pixelFormat == .h264 {
            let packet = h264Frame(number)
            packet.withUnsafeBytes { target.copyMemory(from: $0.baseAddress!, byteCount: min($0.count, capacity)) }
            return min(packet.count, capacity)
        }
        if pixelFormat != .mjpeg {
            PatternPainter(width: width, height: height).paint(into: target, sequence: number, wallNanos: wall)
            return width * height * 2
        }
        if camera.precomputedFrames > 0 {
            if precomputed.isEmpty { prepareFrames() }
            let frame = precomputed[Int(number % UInt64(precomputed.count))]
            frame.withUnsafeBytes { target.copyMemory(from: $0.baseAddress!, byteCount: min($0.count, capacity)) }
            return min(frame.count, capacity)
        }
        let jpeg = encodeJPEG(number, wall: wall)
        jpeg.withUnsafeBytes { target.copyMemory(from: $0.baseAddress!, byteCount: min($0.count, capacity)) }
        return min(jpeg.count, capacity)
    }

    /// Frame `number` as a UVC H.264 camera sends it: Annex B, SPS/PPS before each keyframe
    /// (one every 10 frames). Encoded once, then repeated; the pattern carries `number % count`.
    private func h264Frame(_ number: UInt64) -> Data {
        if h264Frames.isEmpty {
            let count = max(camera.precomputedFrames, 300)
            var settings = EncoderSettings(preset: "ultrafast", keyframeIntervalSeconds: 10 / frameRate)
            settings.parameterSetsInBand = true
            let encoder = try! VideoEncoder(width: width, height: height, framesPerSecond: frameRate, settings: settings)
            let yuyv = UnsafeMutableRawBufferPointer.allocate(byteCount: width * height * 2, alignment: 64)
            defer { yuyv.deallocate() }
            let picture = try! Picture(width: width, height: height)
            let painter = PatternPainter(width: width, height: height)
            let scaler = Scaler()
            let packet = Packet()
            func drain() {
                while (try? encoder.receive(into: packet)) == .ok {
                    h264Frames.append(Data(packet.bytes))
                    packet.unref()
                }
            }
            for n in 0..<count {
                painter.paint(into: yuyv.baseAddress!, sequence: UInt64(n), wallNanos: 0)
                try! scaler.convert(raw: UnsafeRawBufferPointer(yuyv), format: .yuyv422, width: width, height: height, into: picture)
                _ = try! encoder.send(picture, pts: Int64(n) * 6000, keyframe: false)
                drain()
            }
            try! encoder.sendEndOfStream()
            drain()
        }
        return h264Frames[Int(number % UInt64(h264Frames.count))]
    }

    /// `noisy` adds sensor-like noise to the lower half, so frames are as large as a real
    /// camera's (a flat test pattern compresses far better than any real scene).
    private func encodeJPEG(_ number: UInt64, wall: Int64, noisy: Bool = false) -> Data {
        if painterCache == nil {
            let encoder = try! JPEGEncoder(width: width, height: height, quality: 85, chroma: .yuyv422)
            painterCache = (PatternPainter(width: width, height: height), .allocate(byteCount: width * height * 2, alignment: 64),
                            encoder, try! encoder.makePicture(), Scaler())
        }
        let c = painterCache!
        c.painter.paint(into: c.yuyv.baseAddress!, sequence: number, wallNanos: wall)
        if noisy {
            var random = SystemRandomNumberGenerator()
            let lower = c.yuyv.baseAddress!.advanced(by: width * 2 * (height / 2)).assumingMemoryBound(to: UInt8.self)
            for i in stride(from: 0, to: width * 2 * (height - height / 2), by: 2) { lower[i] = UInt8.random(in: 16...235, using: &random) }
        }
        try! c.scaler.convert(raw: UnsafeRawBufferPointer(c.yuyv), format: .yuyv422, width: width, height: height, into: c.picture)
        return try! c.jpeg.encode(c.picture) { Data($0) }
    }
}
