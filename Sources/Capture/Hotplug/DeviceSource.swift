/// Where a supervisor finds cameras and hears that the set changed.
public protocol DeviceSource: Sendable {
    /// The cameras present now.
    func devices() -> [CaptureDevice]
    /// Plug and unplug events.
    func changes() -> AsyncStream<DeviceChange>
}

/// USB cameras: discovery through the V4L2 seam, changes from a `DeviceMonitor`.
public struct V4L2DeviceSource: DeviceSource {
    public let discovery: V4L2Discovery
    public let monitor: DeviceMonitor

    public init(discovery: V4L2Discovery = V4L2Discovery(), monitor: DeviceMonitor = DeviceMonitor()) {
        self.discovery = discovery
        self.monitor = monitor
    }

    public func devices() -> [CaptureDevice] { discovery.devices() }
    public func changes() -> AsyncStream<DeviceChange> { monitor.changes() }
}
