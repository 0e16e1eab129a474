import Synchronization

/// Driver buffers lent to frames instead of copied, as FFmpeg's `libavdevice/v4l2.c` does: a
/// frame shows the mapped buffer itself, and the buffer goes back to the driver when the last
/// output releases the frame. Releases happen on output threads; the capture thread requeues
/// what came back before its next dequeue (`takeReturned`), so every ioctl stays on it.
///
/// The mappings outlive the stream if they must: closing with buffers still lent (an output
/// still encoding the last frame of an unplugged camera) unmaps when the last one comes back.
final class BufferLender: Sendable {
    private struct State {
        var returned: [UInt32] = []
        var outstanding = 0
        var closed = false
        var unmap: (@Sendable () -> Void)?
    }

    private let state: Mutex<State>

    /// `unmap` frees every mapping; it runs once, after `close()` and the last `giveBack`.
    init(buffers: Int, unmap: @escaping @Sendable () -> Void) {
        var s = State()
        s.returned.reserveCapacity(buffers)
        s.unmap = unmap
        state = Mutex(s)
    }

    /// Capture thread: a buffer is now shown by a frame.
    func lend() { state.withLock { $0.outstanding += 1 } }

    /// Any thread: the frame showing buffer `index` was released.
    func giveBack(_ index: UInt32) {
        let unmap = state.withLock { s -> (@Sendable () -> Void)? in
            s.outstanding -= 1
            guard s.closed else {
                s.returned.append(index)
                return nil
            }
            guard s.outstanding == 0 else { return nil }
            defer { s.unmap = nil }
            return s.unmap
        }
        unmap?()
    }

    /// Capture thread: the buffers given back since the last call, to requeue.
    func takeReturned(into indices: inout [UInt32]) {
        indices.removeAll(keepingCapacity: true)
        state.withLock { s in
            indices.append(contentsOf: s.returned)
            s.returned.removeAll(keepingCapacity: true)
        }
    }

    /// The stream closes: unmaps now if nothing is lent, else when the last buffer comes back.
    func close() {
        let unmap = state.withLock { s -> (@Sendable () -> Void)? in
            s.closed = true
            s.returned.removeAll()
            guard s.outstanding == 0 else { return nil }
            defer { s.unmap = nil }
            return s.unmap
        }
        unmap?()
    }
}
