import Capture
import Foundation

/// Plugs emulated cameras in and out the way the kernel and udev do: the node file appears in
/// (or vanishes from) a device directory that a `DeviceMonitor` watches, and the emulated
/// device becomes reachable (or fails with ENODEV).
public final class EmulatedHotplug: Sendable {
    public let kernel: EmulatedV4L2
    /// A temporary directory standing in for /dev.
    public let deviceDirectory: String

    public init(kernel: EmulatedV4L2, deviceDirectory: String) {
        self.kernel = kernel
        self.deviceDirectory = deviceDirectory
    }

    /// A device source over the emulator whose monitor watches `deviceDirectory` (no netlink:
    /// the kernel's uevents would describe the real machine, not the emulator).
    public func source(rescanInterval: Double = 5) -> V4L2DeviceSource {
        V4L2DeviceSource(
            discovery: V4L2Discovery(system: kernel),
            monitor: DeviceMonitor(.init(deviceDirectory: deviceDirectory, useNetlink: false, rescanInterval: rescanInterval)))
    }

    /// Plugs `camera` in as `/dev/videoN` (the emulator's node and the file in the directory).
    public func plug(_ camera: EmulatedCamera, as name: String) {
        kernel.replug(camera, node: "\(deviceDirectory)/\(name)")
        _ = FileManager.default.createFile(atPath: "\(deviceDirectory)/\(name)", contents: nil)
    }

    public func unplug(_ camera: EmulatedCamera) {
        let node = camera.node
        kernel.unplug(camera)
        try? FileManager.default.removeItem(atPath: node)
    }
}
