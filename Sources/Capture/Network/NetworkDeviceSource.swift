import Media

/// The network cameras a configuration names, as a device source: always present (a camera
/// that cannot be reached is a session that reports it and retries), never plugged or unplugged.
public struct NetworkDeviceSource: DeviceSource {
    public let cameras: [CaptureDevice]

    public init(urls: [String], settings: NetworkCamera.Settings = NetworkCamera.Settings()) {
        var seen = Set<String>()
        cameras = urls.filter { seen.insert($0).inserted }.map {
            NetworkCamera.device(id: NetworkCamera.deviceID(for: $0), url: $0, settings: settings)
        }
    }

    public func devices() -> [CaptureDevice] { cameras }

    public func changes() -> AsyncStream<DeviceChange> { AsyncStream { _ in } }
}

extension NetworkCamera {
    /// The device id of the camera at `url`: its address without credentials.
    public static func deviceID(for url: String) -> String { redactedAddress(url) }
}
