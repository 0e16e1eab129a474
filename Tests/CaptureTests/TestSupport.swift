import Capture
import CaptureTesting
import Foundation
import Media
import Synchronization
import Testing

/// An array shared between threads.
final class LockedArray<Element: Sendable>: Sendable {
    private let storage = Mutex<[Element]>([])
    func append(_ e: Element) { storage.withLock { $0.append(e) } }
    var all: [Element] { storage.withLock { $0 } }
}

/// Collects a session's events for later assertions.
final class EventLog: Sendable {
    private let events = LockedArray<SessionEvent>()
    private let task: Mutex<Task<Void, Never>?> = Mutex(nil)

    init(_ session: CaptureSession) {
        let stream = session.events
        let t = Task.detached { [events] in
            for await e in stream { events.append(e) }
        }
        task.withLock { $0 = t }
    }

    var all: [SessionEvent] { events.all }

    var segments: [SegmentInfo] {
        all.compactMap { if case .segmentFinished(_, let s) = $0 { return s } else { return nil } }
    }
    var stills: [StillInfo] {
        all.compactMap { if case .stillSaved(_, let s) = $0 { return s } else { return nil } }
    }
    var errors: [String] {
        all.compactMap { if case .runtimeError(_, let m, _) = $0 { return m } else { return nil } }
    }
    var drops: [(output: String, count: Int)] {
        all.compactMap { if case .droppedFrames(_, let o, let n) = $0 { return (o, n) } else { return nil } }
    }

    /// Whether the session's `stopped` event arrived: it follows every output's last event.
    var hasStopped: Bool { all.contains { if case .stopped = $0 { true } else { false } } }

    func cancel() { task.withLock { $0?.cancel() } }
}

/// Stops `session` and waits for its `stopped` event, so that every event before it (the last
/// segment's `segmentFinished`, a final drop report) is in `log` when the test reads it.
func stopAndDrain(_ session: CaptureSession, _ log: EventLog, sourceLocation: SourceLocation = #_sourceLocation) async {
    await session.stop()
    #expect(await waitUntil(seconds: 30) { log.hasStopped }, "the session's stopped event never came", sourceLocation: sourceLocation)
}

/// Records frames' sequence numbers, wall times and (optionally) bytes, as delivered.
final class FrameLog: Sendable {
    struct Entry: Sendable {
        let sequence: UInt64
        let wallNanos: Int64
        let width: Int
        let height: Int
        let bytes: Data?
    }
    private let entries = LockedArray<Entry>()
    let output: FrameOutput

    init(keepBytes: Bool = false, name: String = "frames", delayPerFrame: Double = 0, dropsLateFrames: Bool = true, queueCapacity: Int = 64) {
        let entries = self.entries
        output = FrameOutput(name: name, queueCapacity: queueCapacity, dropsLateFrames: dropsLateFrames) { frame in
            let entry = Entry(
                sequence: frame.sequence, wallNanos: frame.wallNanos, width: frame.width, height: frame.height,
                bytes: keepBytes ? Data(frame.bytes) : nil)
            entries.append(entry)
            if delayPerFrame > 0 { usleep(UInt32(delayPerFrame * 1e6)) }
        }
    }

    var all: [Entry] { entries.all }
    var count: Int { entries.all.count }
}

/// A running session on a synthetic camera with the given outputs.
func startSession(
    device: CaptureDevice = SyntheticCamera.device(), format: FormatRequest, fps: Double,
    outputs: [(CaptureOutput, ConnectionSettings)]
) throws -> (CaptureSession, EventLog) {
    let session = CaptureSession()
    let log = EventLog(session)
    session.beginConfiguration()
    try session.addInput(device)
    try session.setFormat(format)
    try session.setFrameRate(fps)
    for (o, c) in outputs { try session.addOutput(o, settings: c) }
    try session.commitConfiguration()
    try session.startRunning()
    return (session, log)
}

/// Asserts that the frames decoded from `files`, in order, are consecutive sequence numbers.
func expectContiguous(_ decoded: [DecodedRecording], sourceLocation: SourceLocation = #_sourceLocation) -> [UInt32] {
    let all = decoded.flatMap(\.sequences)
    #expect(!all.isEmpty, "no frames decoded", sourceLocation: sourceLocation)
    #expect(all.allSatisfy { $0 != nil }, "a frame's sequence code could not be read", sourceLocation: sourceLocation)
    let seqs = all.compactMap { $0 }
    for (a, b) in zip(seqs, seqs.dropFirst()) where b != a + 1 {
        Issue.record("frames not contiguous: \(a) is followed by \(b)", sourceLocation: sourceLocation)
        break
    }
    return seqs
}

/// A recording's time in its name as README.md documents it (UTC, `20261122T065700Z`), made
/// without the code under test.
func documentedStamp(_ wallNanos: Int64) -> String {
    let formatter = DateFormatter()
    formatter.locale = Locale(identifier: "en_US_POSIX")
    formatter.timeZone = TimeZone(identifier: "UTC")
    formatter.dateFormat = "yyyyMMdd'T'HHmmss'Z'"
    return formatter.string(from: Date(timeIntervalSince1970: Double(wallNanos / 1_000_000_000)))
}
