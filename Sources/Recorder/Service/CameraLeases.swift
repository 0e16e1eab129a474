import Capture
import Plumbing

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

    /// Waits until `camera`'s recording has written a frame into a file, `limit` at most; false
    /// when it has not (a hand-over's taker says it records, so the giver may stop).
    public func firstWrittenFrame(of camera: String, within limit: Duration) async -> Bool {
        let end = ContinuousClock.now + limit
        repeat {
            if (await control.writtenFrames(of: camera) ?? 0) > 0 { return true }
            try? await Task.sleep(for: .milliseconds(50))
        } while ContinuousClock.now < end && !Task.isCancelled
        return false
    }

    /// Stops recording `camera`, its open files finalized.
    public func release(_ camera: String) async { await control.release(camera) }

    /// From `deadline` on, `camera`'s frames are dropped and its files ended on the capture
    /// thread, whatever the rest of the process is doing, until `lift` or `hold`.
    public func fence(_ camera: String, at deadline: ContinuousClock.Instant) async {
        // ContinuousClock is the boot-time clock on Linux; its instants are opaque, spans are not.
        let remaining = ContinuousClock.now.duration(to: deadline).components
        // Read before the hop to the control plane, which may wait its turn.
        let at = SystemClocks.bootNanos() + max(-1_000_000, min(1_000_000, remaining.seconds)) * 1_000_000_000 + remaining.attoseconds / 1_000_000_000
        await control.fence(of: camera)?.close(atBootNanos: at)
    }

    /// Lets `camera`'s frames through again: its lease was renewed.
    public func lift(_ camera: String) async { await control.fence(of: camera)?.open() }
}
