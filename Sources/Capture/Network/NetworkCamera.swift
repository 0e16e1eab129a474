import Media

/// A network camera (RTSP H.264/H.265 or HTTP MJPEG) as a capture device. Opening never
/// blocks: the stream connects on its capture thread, and reconnects there on its own (see
/// `NetworkStream`), so a camera that is down at start is a session that waits, not an error.
public struct NetworkCamera: CaptureDeviceBackend {
    public struct Settings: Sendable, Equatable {
        public var transport: NetworkSource.Transport
        /// Longest wait for a connection, its description or a server's answer.
        public var connectTimeoutNanos: Int64
        /// No video for this long (or two keyframe intervals, if longer) is a stall.
        public var minimumStallNanos: Int64

        public init(transport: NetworkSource.Transport = .tcp, connectTimeoutNanos: Int64 = 10_000_000_000, minimumStallNanos: Int64 = 10_000_000_000) {
            self.transport = transport
            self.connectTimeoutNanos = connectTimeoutNanos
            self.minimumStallNanos = minimumStallNanos
        }
    }

    /// The full address, credentials included: it never leaves this value (descriptions redact it).
    let url: String
    public let settings: Settings
    /// The camera's retry ladder, shared by every session opened on this device.
    let retries = RetrySchedule()

    public init(url: String, settings: Settings = Settings()) {
        self.url = url
        self.settings = settings
    }

    /// Its stream reconnects on the camera's ladder and reports stalls itself (`NetworkStream`).
    public var reconnectsByItself: Bool { true }

    /// Its ladder's next attempt, once an attempt failed (the API says when it tries again).
    public var nextAttemptMonotonicNanos: Int64? { retries.failures > 0 ? retries.nextAttemptMonotonic : nil }

    /// A device for `url`. Its one format says what the camera is expected to send (HTTP:
    /// MJPEG, RTSP: H.264 or H.265, whichever arrives); its size is the camera's own (0×0 here).
    public static func device(id: String, url: String, settings: Settings = Settings()) -> CaptureDevice {
        let address = redactedAddress(url)
        let expected: PixelFormat = url.lowercased().hasPrefix("http") ? .mjpeg : .h264
        return CaptureDevice(
            id: id, name: "Network camera \(address)",
            formats: [DeviceFormat(pixelFormat: expected, width: 0, height: 0, frameRates: 1...120)],
            details: DeviceDetails(node: address, driver: url.lowercased().hasPrefix("http") ? "http" : "rtsp"),
            backend: NetworkCamera(url: url, settings: settings))
    }

    public func open(format: DeviceFormat, frameRate: Double) throws -> any CaptureStream {
        NetworkStream(url: url, settings: settings, retries: retries)
    }

    /// The same address (credentials included) over the same transport.
    public func opensTheSameStream(as other: any CaptureDeviceBackend) -> Bool {
        guard let other = other as? NetworkCamera else { return false }
        return other.url == url && other.settings == settings
    }
}

extension NetworkCamera: CustomStringConvertible, CustomDebugStringConvertible {
    // Printed, also as a part of a value printed whole, its address is redacted.
    public var description: String { "NetworkCamera(\(redactedAddress(url)))" }
    public var debugDescription: String { description }
}

extension CaptureDevice {
    /// Whether this is the network camera at `url`, credentials included: two cameras at one
    /// address with different users or passwords are two devices, though their ids (the address
    /// redacted) are the same.
    public func isNetworkCamera(at url: String) -> Bool { (backend as? NetworkCamera)?.url == url }
}

extension NetworkInterrupt: AbortHandle {}
