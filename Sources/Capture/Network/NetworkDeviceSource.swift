import Media

/// The network cameras a configuration names, as a device source: always present (a camera
/// that cannot be reached is a session that reports it and retries), never plugged or unplugged.
public struct NetworkDeviceSource: DeviceSource {
    public let cameras: [CaptureDevice]

    /// One device per address (the first camera's settings win when two name the same one).
    public init(cameras: [(url: String, settings: NetworkCamera.Settings)]) {
        var seen = Set<String>()
        self.cameras = cameras.filter { seen.insert($0.url).inserted }.map {
            NetworkCamera.device(id: NetworkCamera.deviceID(for: $0.url), url: $0.url, settings: $0.settings)
        }
    }

    public func devices() -> [CaptureDevice] { cameras }

    public func changes() -> AsyncStream<DeviceChange> { AsyncStream { _ in } }
}

extension NetworkCamera {
    /// The device id of the camera at `url`: its address without credentials.
    public static func deviceID(for url: String) -> String { redactedAddress(url) }
}
