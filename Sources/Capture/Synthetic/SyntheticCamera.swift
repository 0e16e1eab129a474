import Media
import Plumbing

/// A test-pattern camera that behaves like a real one: it delivers frames at a real-time pace
/// in YUYV or MJPEG, each carrying its sequence number as blocks (see `SequencePattern`), and
/// can be unplugged or wedged through its `faults`. Given a `scene`, it films that scripted
/// scene instead (motion detection's tests).
public struct SyntheticCamera: CaptureDeviceBackend {
    public let faults: SyntheticFaults
    public let scene: SyntheticScene?

    /// The sizes a synthetic camera offers unless told otherwise, in YUYV and MJPEG, 1–60 fps.
    public static let standardSizes: [(Int, Int)] = [
        (160, 120), (320, 240), (640, 360), (640, 480), (800, 600), (1280, 720), (1920, 1080),
    ]

    public init(faults: SyntheticFaults = SyntheticFaults(), scene: SyntheticScene? = nil) {
        self.faults = faults
        self.scene = scene
    }

    /// A synthetic camera device named `synthetic-N`; filming `scene`, `synthetic-scene-N`
    /// ("Synthetic scene N").
    public static func device(
        index: Int = 0, sizes: [(Int, Int)] = standardSizes,
        pixelFormats: [PixelFormat] = [.yuyv422, .mjpeg], frameRates: ClosedRange<Double> = 1...60,
        faults: SyntheticFaults = SyntheticFaults(), scene: SyntheticScene? = nil
    ) -> CaptureDevice {
        let formats = pixelFormats.flatMap { f in
            sizes.map { DeviceFormat(pixelFormat: f, width: $0.0, height: $0.1, frameRates: frameRates) }
        }
        let kind = scene == nil ? "" : "scene-"
        return CaptureDevice(
            id: "synthetic-\(kind)\(index)", name: scene == nil ? "Synthetic camera \(index)" : "Synthetic scene \(index)", formats: formats,
            details: DeviceDetails(node: "synthetic:\(kind)\(index)", driver: "synthetic"),
            backend: SyntheticCamera(faults: faults, scene: scene))
    }

    public func open(format: DeviceFormat, frameRate: Double) throws -> any CaptureStream {
        if faults.isUnplugged { throw CaptureError.disconnected(reason: "synthetic camera is unplugged", cause: .unplugged) }
        return try SyntheticStream(format: format, frameRate: frameRate, faults: faults, scene: scene)
    }
}

final class SyntheticStream: CaptureStream {
    private let format: DeviceFormat
    private var pacer: FramePacer
    private let painter: PatternPainter
    // MJPEG only: the camera's own encoder.
    private var yuyv: UnsafeMutableRawBufferPointer?
    private var jpeg: JPEGEncoder?
    private var jpegPicture: Picture?
    private let scaler = Scaler()
    let maximumFrameBytes: Int

    private let faults: SyntheticFaults
    private let scene: SyntheticScene?
    private var noise: UInt64 = 0x9E37_79B9_7F4A_7C15

    init(format: DeviceFormat, frameRate: Double, faults: SyntheticFaults, scene: SyntheticScene?) throws {
        self.format = format
        self.faults = faults
        self.scene = scene
        pacer = FramePacer(frameRate: frameRate)
        painter = PatternPainter(width: format.width, height: format.height)
        let raw = format.width * format.height * 2
        if format.pixelFormat == .mjpeg {
            yuyv = .allocate(byteCount: raw, alignment: 64)
            let encoder = try JPEGEncoder(width: format.width, height: format.height, quality: 90, chroma: .yuyv422)
            jpeg = encoder
            jpegPicture = try encoder.makePicture()
            maximumFrameBytes = raw + 4096
        } else {
            maximumFrameBytes = format.pixelFormat.frameByteCount(width: format.width, height: format.height) ?? raw
        }
    }

    deinit { yuyv?.deallocate() }

    func readFrame(into frame: CapturedFrame, timeoutNanos: Int64) throws -> ReadResult {
        if faults.isUnplugged { throw CaptureError.disconnected(reason: "synthetic camera was unplugged", cause: .unplugged) }
        if faults.isWedged {
            SystemClocks.sleep(untilMonotonic: SystemClocks.monotonicNanos() + timeoutNanos)
            return .timeout
        }
        guard pacer.waitForNextFrame(timeoutNanos: timeoutNanos) else { return .timeout }
        let sequence = pacer.sequence - 1
        let wall = SystemClocks.wallNanos()
        let monotonic = SystemClocks.monotonicNanos()
        let byteCount: Int
        if let yuyv, let jpeg, let jpegPicture {
            paint(into: yuyv.baseAddress!, sequence: sequence, wallNanos: wall)
            try scaler.convert(raw: UnsafeRawBufferPointer(yuyv), format: .yuyv422, width: format.width, height: format.height, into: jpegPicture)
            byteCount = try jpeg.encode(jpegPicture) { bytes in
                guard frame.reserve(bytes.count) else { throw MediaError(operation: "copy a synthetic JPEG", message: "out of memory") }
                frame.storage.copyMemory(from: bytes)
                return bytes.count
            }
        } else {
            paint(into: frame.storage.baseAddress!, sequence: sequence, wallNanos: wall)
            byteCount = format.width * format.height * 2
        }
        frame.setContents(
            byteCount: byteCount, format: format.pixelFormat, width: format.width, height: format.height,
            sequence: sequence, monotonicNanos: monotonic,
            wallNanos: wall)
        return .frame
    }

    private func paint(into base: UnsafeMutableRawPointer, sequence: UInt64, wallNanos: Int64) {
        if let scene {
            scene.paint(into: base, width: format.width, height: format.height, sequence: sequence, wallNanos: wallNanos, noise: &noise)
        } else {
            painter.paint(into: base, sequence: sequence, wallNanos: wallNanos)
        }
    }

    func close() {}
}
