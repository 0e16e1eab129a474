import Media
import Synchronization

/// The network cameras a configuration names, as a device source: present as long as the
/// configuration names them (a camera that cannot be reached is a session that reports it and
/// retries), never plugged or unplugged. A reload replaces the list (`update`); a camera it
/// keeps as it was keeps its device, and with it its place on the retry ladder.
public final class NetworkDeviceSource: DeviceSource {
    private let current: Mutex<[CaptureDevice]>

    public init(cameras: [(url: String, settings: NetworkCamera.Settings)]) {
        current = Mutex(Self.devices(cameras))
    }

    /// The cameras of a new configuration; those it adds are found at the supervisor's next look.
    public func update(cameras: [(url: String, settings: NetworkCamera.Settings)]) {
        current.withLock { $0 = Self.devices(cameras, keeping: $0) }
    }

    /// One device per address (the first camera's settings win when two name the same one);
    /// a device of `old` with the same address and settings is kept.
    private static func devices(_ cameras: [(url: String, settings: NetworkCamera.Settings)], keeping old: [CaptureDevice] = []) -> [CaptureDevice] {
        var seen = Set<String>()
        return cameras.filter { seen.insert($0.url).inserted }.map { camera in
            let new = NetworkCamera.device(id: NetworkCamera.deviceID(for: camera.url), url: camera.url, settings: camera.settings)
            return old.first { $0.backend.opensTheSameStream(as: new.backend) } ?? new
        }
    }

    public func devices() -> [CaptureDevice] { current.withLock { $0 } }

    public func changes() -> AsyncStream<DeviceChange> { AsyncStream { _ in } }
}

extension NetworkCamera {
    /// The device id of the camera at `url`: its address without credentials.
    public static func deviceID(for url: String) -> String { redactedAddress(url) }
}
