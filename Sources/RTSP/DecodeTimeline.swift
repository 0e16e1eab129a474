/// Decode times for pictures that carry only their presentation time, as RTP's do. With
/// B-frames a camera sends a picture before others that are shown earlier; a decoder needs
/// times that rise in the order pictures arrive and never pass their presentation time. With
/// a reordering depth of `d`, each picture's decode time is the smallest of the last `d + 1`
/// presentation times not yet used, started `d` frame durations before the first picture.
package struct DecodeTimeline {
    package private(set) var depth: Int
    private let frameTicks: Int64
    /// Presentation times not used as decode times yet, ascending (at most `depth` + 1).
    private var pending: [Int64] = []
    private var last: Int64?

    package init(depth: Int, frameTicks: Int64) {
        self.depth = depth
        // A camera's step between pictures, from its SDP or timestamps: at most 10 s (90 kHz).
        self.frameTicks = min(max(frameTicks, 1), 900_000)
        pending.reserveCapacity(16)
    }

    /// The decode time of the next picture, shown at `pts`. A picture reordered deeper than
    /// the depth (a camera that changed its GOP) gets a decode time that goes back: the clock
    /// flags that as a break, and the depth grows for the pictures after it. A picture further
    /// back than any reordering (16 frames) is the camera's clock set back: the times start
    /// again from it, and the depth stays.
    package mutating func decodeTime(presentedAt pts: Int64) -> Int64 {
        if let last, pts < last {
            // Both within ±2^61 (`RTPTimestampUnwrapper`): the difference fits.
            if last - pts <= 16 * frameTicks { depth = min(depth + 1, 15) }
            pending.removeAll(keepingCapacity: true)
        }
        if pending.isEmpty {
            for k in stride(from: depth, to: 0, by: -1) { pending.append(pts - Int64(k) * frameTicks) }
        }
        let index = pending.firstIndex { $0 > pts } ?? pending.count
        pending.insert(pts, at: index)
        let dts = pending.removeFirst()
        last = dts
        return dts
    }

    /// The reordering depth of pictures that arrived with presentation times `times`: the most
    /// pictures sent before one that are shown after it.
    package static func depth(of times: [Int64]) -> Int {
        var depth = 0
        for (i, t) in times.enumerated() {
            depth = max(depth, times[..<i].filter { $0 > t }.count)
        }
        return min(depth, 15)
    }

    /// The smallest step between distinct presentation times, or nil with fewer than two.
    package static func frameTicks(of times: [Int64]) -> Int64? {
        let sorted = Set(times).sorted()
        return zip(sorted.dropFirst(), sorted).map { $0 - $1 }.min()
    }
}

/// RTP's 32-bit timestamps, which wrap every 13 hours at 90 kHz, extended to 64 bits. Each step
/// is taken as the shorter way round (at most 2^31 ticks, forwards or back). Extended times stay
/// within ±2^61 (800,000 years), so that their differences cannot overflow: a camera that
/// steps by 2^31 for ever starts again from its raw timestamp, which its clock sees as a jump.
package struct RTPTimestampUnwrapper {
    package static let bound: Int64 = 1 << 61
    private var last: (raw: UInt32, extended: Int64)?

    package init() {}

    package mutating func extend(_ raw: UInt32) -> Int64 {
        var extended = last.map { $0.extended + Int64(Int32(bitPattern: raw &- $0.raw)) } ?? Int64(raw)
        if extended > Self.bound || extended < -Self.bound { extended = Int64(raw) }
        last = (raw, extended)
        return extended
    }
}
