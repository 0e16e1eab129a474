import Plumbing
import Synchronization

/// A lease's fence on one camera's recording (`[cluster]`): from the instant it is closed at,
/// the capture thread ends the open files as at a lost stream and drops every frame, until it
/// is opened again. The instant is read on the boot-time clock, which keeps counting while the
/// process is stopped or the machine sleeps, like the lease it guards: a node that wakes after
/// its lease ran out writes not one more frame before it has a lease again. Set from the
/// cluster's lease keeper, read by the capture thread on every frame (one atomic load while
/// open).
public final class CaptureFence: Sendable {
    /// Boot-time nanoseconds from which frames are dropped; `Int64.max`: open.
    private let closesAt = Atomic<Int64>(.max)

    public init() {}

    /// Drops frames from `bootNanos` on (`SystemClocks.bootNanos`), until `open()`.
    public func close(atBootNanos bootNanos: Int64) { closesAt.store(bootNanos, ordering: .releasing) }

    /// Lets frames through again (the lease was renewed, or taken anew).
    public func open() { closesAt.store(.max, ordering: .releasing) }

    /// Whether a frame captured now must be dropped.
    var blocksNow: Bool {
        let at = closesAt.load(ordering: .acquiring)
        return at != .max && SystemClocks.bootNanos() >= at
    }
}
