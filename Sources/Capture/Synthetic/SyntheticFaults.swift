import Synchronization

/// Fault injection for a synthetic camera, usable from tests and from `vigil demo --chaos`:
/// unplug it (its stream fails as a disconnected device does, and it cannot be opened), or
/// wedge it (it stays open but delivers no frame, like a stalled camera).
public final class SyntheticFaults: Sendable {
    private let state = Mutex<(unplugged: Bool, wedged: Bool)>((false, false))
    private let listeners = Mutex<[@Sendable (Bool) -> Void]>([])

    public init() {}

    public var isUnplugged: Bool { state.withLock { $0.unplugged } }
    public var isWedged: Bool { state.withLock { $0.wedged } }

    public func unplug() { set(unplugged: true) }
    public func replug() { set(unplugged: false) }
    public func wedge(_ on: Bool) { state.withLock { $0.wedged = on } }

    /// Called with the new plugged state whenever it changes (a synthetic hotplug event).
    public func onPlugChange(_ listener: @escaping @Sendable (_ plugged: Bool) -> Void) {
        listeners.withLock { $0.append(listener) }
    }

    private func set(unplugged: Bool) {
        let changed = state.withLock { s -> Bool in
            defer { s.unplugged = unplugged }
            return s.unplugged != unplugged
        }
        if changed { for l in listeners.withLock({ $0 }) { l(!unplugged) } }
    }
}
