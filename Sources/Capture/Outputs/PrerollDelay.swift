import Media

/// What a recording of motion only (`[[record]] mode = "motion"`) holds back: the packets of the
/// last few seconds, copied, so that when motion is found the file can begin `pre_seconds`
/// before it (from the keyframe before). Packets leave a whole group of pictures at a time
/// (a keyframe and the frames up to the next), once the next group has begun before the
/// decision time, so a file always starts at a keyframe. Buffers are reused: in steady state
/// holding a packet allocates nothing.
final class PrerollDelay {
    struct Held {
        var bytes: [UInt8]
        var pts: Int64
        /// pts − dts in the muxer's 90 kHz units (B-frames).
        var presentationDelay: Int64
        var isKeyframe: Bool
        var wallNanos: Int64
        var stream: StreamDescription
        var container: Container
        /// The camera's timing broke before this packet: a file ends before it.
        var breaksBefore: Bool
    }

    private var held: [Held] = []
    private var spare: [[UInt8]] = []
    /// A group longer than this (a camera that sends few keyframes) is decided without waiting
    /// for the next one, so memory stays bounded.
    private let longestGroupNanos: Int64

    init(longestGroupNanos: Int64 = 30_000_000_000) {
        self.longestGroupNanos = longestGroupNanos
        held.reserveCapacity(512)
    }

    /// Holds a copy of `bytes`. Frames before the first keyframe cannot begin a file: dropped.
    func hold(
        _ bytes: UnsafeRawBufferPointer, pts: Int64, presentationDelay: Int64, keyframe: Bool, wallNanos: Int64,
        stream: StreamDescription, container: Container, breaksBefore: Bool
    ) {
        guard keyframe || !held.isEmpty else { return }
        var buffer = spare.popLast() ?? []
        buffer.removeAll(keepingCapacity: true)
        buffer.append(contentsOf: bytes)
        held.append(Held(
            bytes: buffer, pts: pts, presentationDelay: presentationDelay, isKeyframe: keyframe, wallNanos: wallNanos,
            stream: stream, container: container, breaksBefore: breaksBefore))
    }

    /// Hands over, oldest first, every group of pictures whose successor began at or before
    /// `cutoff` (a group that has grown too long goes too).
    func release(before cutoff: Int64, _ body: (ArraySlice<Held>) throws -> Void) rethrows {
        while !held.isEmpty {
            if let next = held.indices.dropFirst().first(where: { held[$0].isKeyframe }), held[next].wallNanos <= cutoff {
                try handOver(next, body)
            } else if held.last!.wallNanos - held[0].wallNanos > longestGroupNanos {
                try handOver(held.count, body)
            } else {
                return
            }
        }
    }

    /// Hands over everything held, group by group (the recording stops).
    func releaseAll(_ body: (ArraySlice<Held>) throws -> Void) rethrows {
        while !held.isEmpty {
            try handOver(held.indices.dropFirst().first(where: { held[$0].isKeyframe }) ?? held.count, body)
        }
    }

    /// Whether anything is held (for the output's idle state).
    var isEmpty: Bool { held.isEmpty }

    private func handOver(_ count: Int, _ body: (ArraySlice<Held>) throws -> Void) rethrows {
        defer {
            for i in 0..<count { spare.append(held[i].bytes) }
            held.removeFirst(count)
        }
        try body(held[0..<count])
    }
}
