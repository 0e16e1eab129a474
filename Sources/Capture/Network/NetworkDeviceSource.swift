import Media
import Synchronization

/// The network cameras a configuration names, as a device source: present as long as the
/// configuration names them (a camera that cannot be reached is a session that reports it and
/// retries), never plugged or unplugged. A reload replaces the list (`update`).
public final class NetworkDeviceSource: DeviceSource {
    private let current: Mutex<[CaptureDevice]>

    public init(cameras: [(url: String, settings: NetworkCamera.Settings)]) {
        current = Mutex(Self.devices(cameras))
    }

    /// The cameras of a new configuration; those it adds are found at the supervisor's next look.
    public func update(cameras: [(url: String, settings: NetworkCamera.Settings)]) {
        let devices = Self.devices(cameras)
        current.withLock { $0 = devices }
    }

    /// One device per address (the first camera's settings win when two name the same one).
    private static func devices(_ cameras: [(url: String, settings: NetworkCamera.Settings)]) -> [CaptureDevice] {
        var seen = Set<String>()
        return cameras.filter { seen.insert($0.url).inserted }.map {
            NetworkCamera.device(id: NetworkCamera.deviceID(for: $0.url), url: $0.url, settings: $0.settings)
        }
    }

    public func devices() -> [CaptureDevice] { current.withLock { $0 } }

    public func changes() -> AsyncStream<DeviceChange> { AsyncStream { _ in } }
}

extension NetworkCamera {
    /// The device id of the camera at `url`: its address without credentials.
    public static func deviceID(for url: String) -> String { redactedAddress(url) }
}
