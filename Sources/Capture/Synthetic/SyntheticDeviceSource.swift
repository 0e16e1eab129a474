import Synchronization

/// Synthetic cameras as a device source: present unless unplugged through their faults, with a
/// change event each time one is unplugged or plugged back.
public final class SyntheticDeviceSource: DeviceSource {
    public let cameras: [(device: CaptureDevice, faults: SyntheticFaults)]
    private let continuations = Mutex<[AsyncStream<DeviceChange>.Continuation]>([])

    public init(count: Int, sizes: [(Int, Int)] = SyntheticCamera.standardSizes) {
        cameras = (0..<count).map { index in
            let faults = SyntheticFaults()
            return (SyntheticCamera.device(index: index, sizes: sizes, faults: faults), faults)
        }
        for (device, faults) in cameras {
            let node = device.details.node ?? device.id
            faults.onPlugChange { [weak self] plugged in
                self?.broadcast(plugged ? .connected(node: node) : .disconnected(node: node))
            }
        }
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
