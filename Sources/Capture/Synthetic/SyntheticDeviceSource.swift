import Synchronization

/// Synthetic cameras as a device source: present unless unplugged through their faults, with a
/// change event each time one is unplugged or plugged back. A reload that names a new
/// `synthetic-N` grows the set (`grow(to:)`); cameras are never taken away.
public final class SyntheticDeviceSource: DeviceSource {
    private let made = Mutex<[(device: CaptureDevice, faults: SyntheticFaults)]>([])
    private let sizes: [(Int, Int)]
    private let scene: SyntheticScene?
    private let continuations = Mutex<[AsyncStream<DeviceChange>.Continuation]>([])

    /// With a `scene`, every camera films it (`synthetic-scene-N`).
    public init(count: Int, sizes: [(Int, Int)] = SyntheticCamera.standardSizes, scene: SyntheticScene? = nil) {
        self.sizes = sizes
        self.scene = scene
        grow(to: count)
    }

    /// The cameras made so far, plugged in or not.
    public var cameras: [(device: CaptureDevice, faults: SyntheticFaults)] { made.withLock { $0 } }

    /// Makes cameras `synthetic-K` up to `count - 1`; each new one is announced as plugged in.
    public func grow(to count: Int) {
        let added = made.withLock { cameras -> [CaptureDevice] in
            var added: [CaptureDevice] = []
            while cameras.count < count {
                let faults = SyntheticFaults()
                let device = SyntheticCamera.device(index: cameras.count, sizes: sizes, faults: faults, scene: scene)
                let node = device.details.node ?? device.id
                faults.onPlugChange { [weak self] plugged in
                    self?.broadcast(plugged ? .connected(node: node) : .disconnected(node: node))
                }
                cameras.append((device, faults))
                added.append(device)
            }
            return added
        }
        for device in added { broadcast(.connected(node: device.details.node ?? device.id)) }
    }

    public func devices() -> [CaptureDevice] {
        cameras.filter { !$0.faults.isUnplugged }.map(\.device)
    }

    public func changes() -> AsyncStream<DeviceChange> {
        let (stream, continuation) = AsyncStream<DeviceChange>.makeStream(bufferingPolicy: .bufferingNewest(64))
        continuations.withLock { $0.append(continuation) }
        return stream
    }

    private func broadcast(_ change: DeviceChange) {
        for c in continuations.withLock({ $0 }) { c.yield(change) }
    }
}
