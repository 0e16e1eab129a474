import Media

/// A camera: what it is, which formats it can deliver, and the backend that opens it.
/// Mirrors `AVCaptureDevice`; the backend is a V4L2 node, a network stream or a synthetic camera.
public final class CaptureDevice: Sendable, CustomStringConvertible {
    /// Stable identity: survives replugging and renumbering (USB serial, by-id name, URL, …).
    public let id: String
    public let name: String
    public let formats: [DeviceFormat]
    /// Focus, exposure, white balance, brightness, … (empty for cameras without controls).
    public let controls: [DeviceControl]
    /// Where the camera is attached (node, driver, bus), for listings and logs.
    public let details: DeviceDetails
    let backend: any CaptureDeviceBackend

    public init(
        id: String, name: String, formats: [DeviceFormat], controls: [DeviceControl] = [],
        details: DeviceDetails = DeviceDetails(), backend: any CaptureDeviceBackend
    ) {
        self.id = id
        self.name = name
        self.formats = formats
        self.controls = controls
        self.details = details
        self.backend = backend
    }

    /// Whether `other` (found at the same node) opens the stream this device opens: false for
    /// a network camera whose password or transport changed, which must then be reopened.
    public func opensTheSameStream(as other: CaptureDevice) -> Bool { backend.opensTheSameStream(as: other.backend) }
    /// See `CaptureDeviceBackend.reconnectsByItself` (network cameras).
    public var reconnectsByItself: Bool { backend.reconnectsByItself }
    /// See `CaptureDeviceBackend.nextAttemptMonotonicNanos` (network cameras).
    public var nextAttemptMonotonicNanos: Int64? { backend.nextAttemptMonotonicNanos }

    /// The same camera under another id (the name a configuration gives it), so that
    /// recordings, events and logs use that name.
    public func renamed(_ id: String) -> CaptureDevice {
        CaptureDevice(id: id, name: name, formats: formats, controls: controls, details: details, backend: backend)
    }

    /// The control with this key (`brightness`, `focus_auto`, …), if the camera has it.
    public func control(_ key: String) -> DeviceControl? { controls.first { $0.key == key } }

    public var description: String { "\(name) (\(id))" }

    /// Whether `preset` resolves to one of this device's formats.
    public func supports(_ preset: Preset) -> Bool { preset.resolve(in: formats) != nil }

    /// The device format for a request and frame rate, or an error that lists what exists.
    public func resolve(_ request: FormatRequest, frameRate: Double) throws(CaptureError) -> DeviceFormat {
        // A network camera sends what it is set to send (its one format is 0x0): any request takes it.
        if formats.count == 1, formats[0].width == 0, formats[0].height == 0 { return formats[0] }
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
    /// Whether `other`, found at the same node, opens the stream this one opens. A network
    /// camera whose password or transport a reload changed does not: its session must reopen.
    func opensTheSameStream(as other: any CaptureDeviceBackend) -> Bool
    /// Whether its stream notices a loss or a stall and reconnects on its own retry ladder
    /// (`ReadResult.interrupted`, then `.resumed` once frames flow): its session lives through
    /// an outage, so whoever supervises it waits for `.resumed` instead of restarting it.
    var reconnectsByItself: Bool { get }
    /// When a stream that reconnects by itself tries next after a failure (monotonic
    /// nanoseconds; nil: it has not failed, or the supervisor retries this camera itself).
    var nextAttemptMonotonicNanos: Int64? { get }
}

extension CaptureDeviceBackend {
    /// A device node is the device: the same node opens the same stream.
    public func opensTheSameStream(as other: any CaptureDeviceBackend) -> Bool { true }
    public var reconnectsByItself: Bool { false }
    public var nextAttemptMonotonicNanos: Int64? { nil }
}

/// An open, streaming device. Used by exactly one capture thread.
public protocol CaptureStream: AnyObject {
    /// The largest frame this stream can deliver, so pooled buffers are allocated once.
    var maximumFrameBytes: Int { get }
    /// Waits up to `timeoutNanos` for the next frame and writes it into `frame`.
    /// Throws `CaptureError.disconnected` when the camera is gone.
    func readFrame(into frame: CapturedFrame, timeoutNanos: Int64) throws -> ReadResult
    /// Sets control values all at once (they were validated against `CaptureDevice.controls`).
    func apply(controls: [ControlSetting]) throws
    /// Stops streaming and releases everything. Safe to call more than once.
    func close()
    /// For streams whose reads can block beyond `timeoutNanos` (network): called from another
    /// thread on stop so that a blocked read returns at once.
    var abortHandle: (any AbortHandle)? { get }
}

/// Makes a stream's blocking calls return at once; safe from any thread.
public protocol AbortHandle: Sendable {
    func abort()
}

extension CaptureStream {
    public var abortHandle: (any AbortHandle)? { nil }

    public func apply(controls: [ControlSetting]) throws {
        if let first = controls.first { throw CaptureError.invalidSetting("this camera has no control \(first.key)") }
    }
}

public enum ReadResult: Sendable, Equatable {
    case frame
    /// No frame within the timeout (a wedged camera shows up as repeated timeouts).
    case timeout
    /// The camera delivered a broken frame (error flag, empty, truncated JPEG); it was dropped.
    case corrupt(String)
    /// The stream was lost (stall, connection closed, refused …) and the camera is being
    /// reconnected; also reported when a camera cannot be reached at start. The reason names
    /// the cause; the `LossCause` says its kind. Open recordings end here.
    case interrupted(LossCause, String)
    /// Frames flow: sent once the first frame of a connection was delivered, by a stream that
    /// reconnects by itself (`CaptureDeviceBackend.reconnectsByItself`): after `interrupted`,
    /// and at the session's first frame (until then it was connecting).
    case resumed
}

/// A control value to set.
public struct ControlSetting: Sendable, Hashable {
    public let id: UInt32
    public let key: String
    public let value: Int64
}

/// Where a camera is attached.
public struct DeviceDetails: Sendable, Hashable {
    /// Device node (`/dev/video0`) or URL.
    public var node: String?
    public var driver: String?
    public var card: String?
    /// Bus position (`usb-0000:00:14.0-1`).
    public var bus: String?

    public init(node: String? = nil, driver: String? = nil, card: String? = nil, bus: String? = nil) {
        self.node = node
        self.driver = driver
        self.card = card
        self.bus = bus
    }
}
