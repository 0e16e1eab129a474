/// What a cluster's lease keeper (`[cluster]`, in the Cluster target) may do with this node's
/// cameras: list the network cameras nodes share by lease, start recording one whose lease
/// it took, stop one whose lease it lost. The recorder's control plane stays internal.
public final class CameraLeases: Sendable {
    private let control: RecorderControl

    init(control: RecorderControl) { self.control = control }

    /// The configuration's network cameras pinned to no node (a reload may change them).
    public func shared() async -> [String] { await control.leasableCameras }

    /// Starts recording `camera`; false when the configuration no longer shares it.
    public func hold(_ camera: String) async -> Bool { await control.hold(camera) }

    /// Stops recording `camera`, its open files finalized.
    public func release(_ camera: String) async { await control.release(camera) }
}
