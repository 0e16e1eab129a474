import Media

/// A camera: what it is, which formats it can deliver, and the backend that opens it.
/// Mirrors `AVCaptureDevice`; the backend is a V4L2 node, a network stream or a synthetic camera.
public final class CaptureDevice: Sendable, CustomStringConvertible {
    /// Stable identity: survives replugging and renumbering (USB serial, by-id name, URL, …).
    public let id: String
    public let name: String
    public let formats: [DeviceFormat]
    let backend: any CaptureDeviceBackend

    public init(id: String, name: String, formats: [DeviceFormat], backend: any CaptureDeviceBackend) {
        self.id = id
        self.name = name
        self.formats = formats
        self.backend = backend
    }

    public var description: String { "\(name) (\(id))" }

    /// Whether `preset` resolves to one of this device's formats.
    public func supports(_ preset: Preset) -> Bool { preset.resolve(in: formats) != nil }

    /// The device format for a request and frame rate, or an error that lists what exists.
    public func resolve(_ request: FormatRequest, frameRate: Double) throws(SessionError) -> DeviceFormat {
        let format: DeviceFormat?
        switch request {
        case .preset(let preset):
            format = preset.resolve(in: formats)
        case .size(let w, let h, let pixelFormat):
            format = Preset.high.resolve(in: formats.filter {
                $0.width == w && $0.height == h && (pixelFormat == nil || $0.pixelFormat == pixelFormat)
            }) ?? formats.first { $0.width == w && $0.height == h && (pixelFormat == nil || $0.pixelFormat == pixelFormat) }
        }
        guard let format else {
            throw .unsupportedFormat(camera: id, requested: request.description, available: sizeSummary)
        }
        guard format.frameRates.contains(frameRate) else {
            throw .unsupportedFrameRate(camera: id, requested: frameRate, format: format)
        }
        return format
    }

    /// "160x120, 320x240, …": the sizes this device offers.
    public var sizeSummary: String {
        var seen = Set<String>()
        return formats.map(\.sizeDescription).filter { seen.insert($0).inserted }.joined(separator: ", ")
    }
}

/// How a device backend is opened. Backends never touch outputs: they fill frames.
public protocol CaptureDeviceBackend: Sendable {
    func open(format: DeviceFormat, frameRate: Double) throws -> any CaptureStream
}

/// An open, streaming device. Used by exactly one capture thread.
public protocol CaptureStream: AnyObject {
    /// The largest frame this stream can deliver, so pooled buffers are allocated once.
    var maximumFrameBytes: Int { get }
    /// Waits up to `timeoutNanos` for the next frame and writes it into `frame`.
    func readFrame(into frame: CapturedFrame, timeoutNanos: Int64) throws -> ReadResult
    func close()
}

public enum ReadResult: Sendable {
    case frame
    /// No frame within the timeout (a wedged camera shows up as repeated timeouts).
    case timeout
}
