import Foundation
import Media
import Synchronization

/// One camera's H.264 packets as fragmented MP4 for its live viewers, and the run of packets
/// since the last keyframe (a joining viewer starts there; a snapshot decodes it).
///
/// Packets come from one thread at a time: the camera's capture thread for a camera that sends
/// H.264, or the movie output's worker for one whose recording encodes H.264 (its packets
/// are reused: live view adds no encoder). Muxing happens once per camera, only while someone
/// watches; otherwise a packet costs one copy into a reused buffer.
/// @unchecked: its state (codec descriptions and a muxer, not Sendable) is touched only under `lock`.
public final class LiveMP4Feed: @unchecked Sendable {
    private struct State {
        /// The description the packets come with, and the one the muxer uses (with parameter sets).
        var source: StreamDescription?
        var stream: StreamDescription?
        /// Packets since the last keyframe, back to back, and where each ends.
        var run: [UInt8] = []
        var packets: [(end: Int, dts: Int64, delay: Int64)] = []
        /// When the last packet's frame was captured.
        var lastWallNanos: Int64 = 0
        /// False until a keyframe arrives after a start or a lost packet.
        var intact = false
        var fragmenter: LiveFragmenter?
        /// The fragments since the last keyframe's, joined: what a new viewer gets after the init segment.
        var fragmentsSinceKeyframe = Data()
        var joining: [LiveViewer] = []

        /// The first viewer: mux the run so far, so it starts at its keyframe.
        mutating func startFragmenter(_ stream: StreamDescription) throws {
            let fragmenter = try LiveFragmenter(stream: stream)
            fragmentsSinceKeyframe = Data()
            var start = 0
            for p in packets {
                let end = p.end
                try run.withUnsafeBytes { all in
                    try fragmenter.append(UnsafeRawBufferPointer(rebasing: all[start..<end]), dts: p.dts, presentationDelay: p.delay, keyframe: start == 0) { f, _ in
                        fragmentsSinceKeyframe.append(contentsOf: f)
                    }
                }
                start = end
            }
            self.fragmenter = fragmenter
        }

        /// Muxes one packet; the previous packet's fragment, if one came out, and whether it starts at a keyframe.
        mutating func fragment(
            _ bytes: UnsafeRawBufferPointer, dts: Int64, presentationDelay: Int64, keyframe: Bool
        ) throws -> (Data, Bool)? {
            var fragment: (Data, Bool)?
            try fragmenter!.append(bytes, dts: dts, presentationDelay: presentationDelay, keyframe: keyframe) { f, isKey in
                if isKey { fragmentsSinceKeyframe.removeAll(keepingCapacity: true) }
                fragmentsSinceKeyframe.append(contentsOf: f)
                fragment = (Data(f), isKey)
            }
            return fragment
        }
    }

    private let lock = NSLock()
    private var state = State()
    let viewers = LiveViewerSet()
    private let joiningCount = Atomic<Int>(0)

    private func locked<R>(_ body: (inout State) throws -> R) rethrows -> R {
        lock.lock()
        defer { lock.unlock() }
        return try body(&state)
    }

    init() {
        locked {
            $0.run.reserveCapacity(1 << 20)
            $0.packets.reserveCapacity(256)
        }
    }

    /// Whether the camera's packets are H.264 (what browsers play through MSE); nil before any came.
    public var isH264: Bool? { locked { s in s.source.map { $0.codecName == "h264" } } }

    /// Viewers watching or about to.
    public var viewerCount: Int { viewers.viewerCount + joiningCount.load(ordering: .relaxed) }

    /// A new viewer: it gets the init segment and the fragments since the last keyframe with
    /// the next packet, then every fragment. `onClose` runs once when it ends.
    func addViewer(_ viewer: LiveViewer) {
        locked { s in
            s.joining.append(viewer)
            joiningCount.store(s.joining.count, ordering: .relaxed)
        }
    }

    func removeViewer(_ viewer: LiveViewer) {
        locked { s in
            s.joining.removeAll { $0 === viewer }
            joiningCount.store(s.joining.count, ordering: .relaxed)
        }
        viewers.remove(viewer)
    }

    /// Adds one packet (`dts` in 1/90000 s, increasing; shown `presentationDelay` later, with
    /// B-frames). `follows`: false when a packet was lost just before it (the run is broken up
    /// to the next keyframe).
    func append(
        _ bytes: UnsafeRawBufferPointer, dts: Int64, presentationDelay: Int64 = 0, keyframe: Bool, stream: StreamDescription,
        follows: Bool = true, wallNanos: Int64
    ) {
        var ended: [LiveViewer] = []
        var joined: [(LiveViewer, Data, Data)] = []
        var fragment: (Data, Bool)?
        locked { s in
            if s.source !== stream {
                if let current = s.source, !current.matches(stream) {
                    // New parameters need a new init segment: the viewers reconnect.
                    ended = s.joining + viewers.all
                    s.joining.removeAll()
                    s.fragmenter = nil
                    s.intact = false
                }
                s.source = stream
                s.stream = stream.hasParameterSets ? stream : nil
            }
            // A USB camera sends its parameter sets in its keyframes, not beforehand.
            if s.stream == nil && keyframe { s.stream = stream.withParameterSets(from: bytes) }
            if !follows { s.intact = false }
            if keyframe {
                s.run.removeAll(keepingCapacity: true)
                s.packets.removeAll(keepingCapacity: true)
                s.intact = true
            }
            guard s.intact else { return }
            s.run.append(contentsOf: bytes)
            s.packets.append((s.run.count, dts, presentationDelay))
            s.lastWallNanos = wallNanos

            let watched = !s.joining.isEmpty || !viewers.isEmpty
            guard watched, let usable = s.stream, usable.codecName == "h264" else {
                s.fragmenter = nil
                s.fragmentsSinceKeyframe = Data()
                return
            }
            do {
                if s.fragmenter == nil {
                    try s.startFragmenter(usable)
                } else {
                    fragment = try s.fragment(bytes, dts: dts, presentationDelay: presentationDelay, keyframe: keyframe)
                }
            } catch {
                ended = s.joining + viewers.all
                s.joining.removeAll()
                s.fragmenter = nil
                return
            }
            let initSegment = Data(s.fragmenter!.initSegment)
            for v in s.joining {
                joined.append((v, initSegment, s.fragmentsSinceKeyframe))
                viewers.add(v)
            }
            s.joining.removeAll()
            joiningCount.store(0, ordering: .relaxed)
        }
        for v in ended { v.close() }
        // A joining viewer's first fragments are sent whole (one GOP at most); from then on it
        // is offered fragments like the others, and skipped ahead if it cannot keep up.
        for (v, initSegment, run) in joined {
            v.send(initSegment)
            if !run.isEmpty { v.send(run) }
        }
        if let (data, keyframe) = fragment { viewers.offer(data, keyframe: keyframe) }
    }

    /// The stream ended (camera lost, recording stopped): viewers end, the run is forgotten.
    func reset() {
        let ended = locked { s -> [LiveViewer] in
            s.intact = false
            s.fragmenter = nil
            s.fragmentsSinceKeyframe = Data()
            s.run.removeAll(keepingCapacity: true)
            s.packets.removeAll(keepingCapacity: true)
            s.stream = nil
            s.source = nil
            defer { s.joining.removeAll() }
            return s.joining
        }
        joiningCount.store(0, ordering: .relaxed)
        for v in ended + viewers.all { v.close() }
    }

    /// A copy of the run since the last keyframe and its stream (for a snapshot), or nil.
    func copyRun() -> (bytes: [UInt8], ends: [Int], stream: StreamDescription, wallNanos: Int64)? {
        locked { s in
            guard s.intact, let stream = s.stream, !s.packets.isEmpty else { return nil }
            return (s.run, s.packets.map(\.end), stream, s.lastWallNanos)
        }
    }
}
