import Foundation
import Plumbing
import Synchronization

/// What a live viewer receives next.
public enum LiveMessage: Sendable, Equatable {
    /// A JPEG (MJPEG viewers), or the init segment or a fragment (fMP4 viewers).
    case data(Data)
    /// The viewer fell behind: this many fragments were skipped and the next one starts at a keyframe.
    case skipped(Int)
}

/// One live viewer's small bounded queue. The camera's side never waits on it: when it is
/// full a JPEG viewer skips to the newest frame, an fMP4 viewer to the next keyframe (and is
/// told how many fragments it missed). A viewer that takes nothing for `hopelessNanos` is
/// closed. Its reader calls `next()` until it returns nil, and `close()` when it leaves.
public final class LiveViewer: Sendable {
    public enum Kind: Sendable { case mjpeg, mp4 }

    private struct Queued {
        let message: LiveMessage
        /// The init segment must reach the viewer; frames may be skipped.
        let droppable: Bool
    }

    private struct State {
        var queue: [Queued] = []
        var waiter: CheckedContinuation<LiveMessage?, Never>?
        var closed = false
        /// Fragments dropped and not yet reported (fMP4 waits for a keyframe meanwhile).
        var unreportedSkips = 0
        var awaitsKeyframe = false
        /// Frames this viewer missed in all.
        var skipped = 0
        var lastTakenNanos: Int64
    }

    public let kind: Kind
    private let capacity: Int
    private let hopelessNanos: Int64
    private let state: Mutex<State>
    private let onClose: @Sendable (LiveViewer) -> Void

    /// JPEG viewers hold 2 frames (the newest wins); fMP4 viewers about a second of fragments.
    static func capacity(for kind: Kind) -> Int { kind == .mjpeg ? 2 : 32 }
    /// A viewer that takes nothing for this long is not watching any more.
    static let defaultHopelessSeconds: Double = 30

    init(kind: Kind, capacity: Int? = nil, hopelessSeconds: Double = LiveViewer.defaultHopelessSeconds, onClose: @escaping @Sendable (LiveViewer) -> Void) {
        self.kind = kind
        self.capacity = capacity ?? Self.capacity(for: kind)
        hopelessNanos = Int64(hopelessSeconds * 1e9)
        self.onClose = onClose
        state = Mutex(State(lastTakenNanos: SystemClocks.monotonicNanos()))
        state.withLock { $0.queue.reserveCapacity(self.capacity + 2) }
    }

    /// Frames (JPEG) or fragments (fMP4) this viewer missed because it was slow.
    public var skippedCount: Int { state.withLock { $0.skipped } }

    public var isClosed: Bool { state.withLock { $0.closed } }

    /// The next message; nil once the viewer is closed (by itself, the camera, or as hopeless).
    public func next() async -> LiveMessage? {
        await withCheckedContinuation { (c: CheckedContinuation<LiveMessage?, Never>) in
            let ready: LiveMessage?? = state.withLock { s in
                if !s.queue.isEmpty {
                    s.lastTakenNanos = SystemClocks.monotonicNanos()
                    return .some(s.queue.removeFirst().message)
                }
                if s.closed { return .some(nil) }
                s.waiter = c
                return nil
            }
            if let ready { c.resume(returning: ready) }
        }
    }

    /// Ends the viewer: its reader gets nil, and it leaves its camera.
    public func close() {
        let waiter = state.withLock { s -> CheckedContinuation<LiveMessage?, Never>? in
            guard !s.closed else { return nil }
            s.closed = true
            s.queue.removeAll()
            defer { s.waiter = nil }
            return s.waiter
        }
        waiter?.resume(returning: nil)
        onClose(self)
    }

    /// Camera side: something that must arrive (the init segment).
    func send(_ data: Data) {
        _ = offer(Queued(message: .data(data), droppable: false), keyframe: true)
    }

    /// Camera side: a frame or fragment. Returns false if the viewer is closed or hopeless
    /// (the caller then closes it, outside its own lock).
    @discardableResult
    func offer(_ data: Data, keyframe: Bool) -> Bool {
        offer(Queued(message: .data(data), droppable: true), keyframe: keyframe)
    }

    private func offer(_ item: Queued, keyframe: Bool) -> Bool {
        let now = SystemClocks.monotonicNanos()
        var alive = true
        let handOver = state.withLock { s -> (CheckedContinuation<LiveMessage?, Never>, LiveMessage)? in
            guard !s.closed else {
                alive = false
                return nil
            }
            if s.waiter == nil && now - s.lastTakenNanos > hopelessNanos {
                alive = false
                return nil
            }
            switch kind {
            case .mjpeg:
                // Skip to the newest: the oldest frame waiting goes.
                if s.queue.count >= capacity, let i = s.queue.firstIndex(where: \.droppable) {
                    s.queue.remove(at: i)
                    s.skipped += 1
                }
            case .mp4:
                if item.droppable && s.queue.count >= capacity {
                    // Too far behind: drop what waits and resume at the next keyframe.
                    let before = s.queue.count
                    s.queue.removeAll(where: \.droppable)
                    s.unreportedSkips += before - s.queue.count
                    s.skipped += before - s.queue.count
                    s.awaitsKeyframe = true
                }
                if item.droppable && s.awaitsKeyframe {
                    guard keyframe else {
                        s.unreportedSkips += 1
                        s.skipped += 1
                        return nil
                    }
                    s.awaitsKeyframe = false
                    s.queue.append(Queued(message: .skipped(s.unreportedSkips), droppable: false))
                    s.unreportedSkips = 0
                }
            }
            s.queue.append(item)
            guard let waiter = s.waiter else { return nil }
            s.waiter = nil
            s.lastTakenNanos = now
            return (waiter, s.queue.removeFirst().message)
        }
        if let (waiter, message) = handOver { waiter.resume(returning: message) }
        return alive
    }
}

/// The viewers of one camera's feed, offered each new frame on the camera's side.
final class LiveViewerSet: Sendable {
    private let viewers = Mutex<[LiveViewer]>([])
    private let count = Atomic<Int>(0)

    /// Cheap enough for the capture thread.
    var isEmpty: Bool { count.load(ordering: .relaxed) == 0 }
    var viewerCount: Int { count.load(ordering: .relaxed) }

    func add(_ viewer: LiveViewer) {
        viewers.withLock {
            $0.append(viewer)
            count.store($0.count, ordering: .relaxed)
        }
    }

    func remove(_ viewer: LiveViewer) {
        viewers.withLock {
            $0.removeAll { $0 === viewer }
            count.store($0.count, ordering: .relaxed)
        }
    }

    var all: [LiveViewer] { viewers.withLock { $0 } }

    /// Offers `data` to every viewer; closes those that are gone or hopeless.
    func offer(_ data: Data, keyframe: Bool) {
        var gone: [LiveViewer] = []
        viewers.withLock { list in
            for v in list where !v.offer(data, keyframe: keyframe) { gone.append(v) }
        }
        for v in gone { v.close() }
    }

    /// Ends every viewer (the camera stopped or its stream changed).
    func closeAll() {
        for v in all { v.close() }
    }
}
