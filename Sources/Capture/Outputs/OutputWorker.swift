import Foundation
import Media
import Synchronization

/// A dedicated thread with a bounded queue in front of it, bounded in frames and in bytes. The
/// capture thread never waits on a worker that drops late frames: when the queue is full, the
/// new frame is dropped and counted.
/// @unchecked: the ring and controls are guarded by `condition` (an NSCondition: the worker waits on it).
final class OutputWorker: @unchecked Sendable {
    enum Item {
        case frame(CapturedFrame, ConnectionSettings)
        case control(@Sendable () -> Void)
    }

    private let condition = NSCondition()
    private var ring: [Item?]
    private var head = 0
    private var count = 0
    /// Bytes of the frames queued, and the most that may be (a lone frame is always taken).
    private var queuedBytes = 0
    private let byteBudget: Int
    private var controls: [@Sendable () -> Void] = []
    private var stopping = false
    private let dropsLateFrames: Bool
    private let finished = DispatchSemaphore(value: 0)
    private let handle: (CapturedFrame, ConnectionSettings) -> Void

    /// `camera`: FFmpeg's lines from this worker's thread (the encoder's, the muxer's) name it.
    init(name: String, camera: String?, budget: QueueSizing.Budget, dropsLateFrames: Bool, handle: @escaping (CapturedFrame, ConnectionSettings) -> Void) {
        ring = Array(repeating: nil, count: max(1, budget.frames))
        byteBudget = budget.bytes
        self.dropsLateFrames = dropsLateFrames
        self.handle = handle
        let thread = Thread { [self] in
            FFmpegLog.tagThread(camera: camera)
            run()
        }
        thread.name = name
        thread.start()
    }

    enum Admission {
        case queued
        /// The queue was full: a late frame, counted as dropped.
        case dropped
        /// The worker is shutting down: the frame arrived after its output was detached.
        case closed
    }

    /// Queues a frame. Unless it was queued, the caller releases the frame.
    func enqueue(_ frame: CapturedFrame, _ settings: ConnectionSettings, waitsForRoom: Bool = false) -> Admission {
        condition.lock()
        defer { condition.unlock() }
        while isFull(adding: frame.byteCount) && !stopping {
            if dropsLateFrames && !waitsForRoom { return .dropped }
            condition.wait()
        }
        if stopping { return .closed }
        ring[(head + count) % ring.count] = .frame(frame, settings)
        count += 1
        queuedBytes += frame.byteCount
        condition.broadcast()
        return .queued
    }

    /// Under the lock: no room for one more frame of `bytes`.
    private func isFull(adding bytes: Int) -> Bool {
        count == ring.count || (count > 0 && bytes > byteBudget - queuedBytes)
    }

    /// Refuses frames from now on, processes what is queued, runs `last` on the worker thread
    /// and ends the thread; returns when it has ended. Refusing and queueing `last` happen under
    /// one lock, so no frame can slip in after `last` (it would reopen what `last` closed).
    func shutdown(after last: @escaping @Sendable () -> Void) {
        condition.lock()
        stopping = true
        controls.append(last)
        condition.broadcast()
        condition.unlock()
        finished.wait()
    }

    private func run() {
        while true {
            condition.lock()
            while count == 0 && controls.isEmpty && !stopping { condition.wait() }
            // Frames queued before a control item are processed first (controls are rare).
            if count > 0 {
                let item = ring[head]!
                ring[head] = nil
                head = (head + 1) % ring.count
                count -= 1
                if case .frame(let frame, _) = item { queuedBytes -= frame.byteCount }
                condition.broadcast()
                condition.unlock()
                if case .frame(let frame, let settings) = item {
                    handle(frame, settings)
                    frame.release()
                }
                continue
            }
            if !controls.isEmpty {
                let work = controls.removeFirst()
                condition.unlock()
                work()
                continue
            }
            condition.unlock()
            finished.signal()
            return
        }
    }
}
