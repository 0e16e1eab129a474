import Foundation

/// Where the fragments of a fragmented MP4 are and how many frames each holds, read from the
/// boxes (`moof` > `traf` > `trun` sample counts), so a test can cut a file at an exact point
/// and know which frames must survive.
public struct FragmentMap: Sendable {
    public struct Fragment: Sendable {
        /// Offset of the fragment's `moof` and the end of its `mdat`.
        public let start: Int
        public let end: Int
        public let frames: Int
    }

    /// Complete `moof`+`mdat` pairs, in file order.
    public let fragments: [Fragment]

    public init(path: String) throws {
        let data = try Data(contentsOf: URL(fileURLWithPath: path))
        var result: [Fragment] = []
        var pending: (start: Int, frames: Int)?
        Self.walk(data, in: 0..<data.count) { type, range in
            switch type {
            case "moof": pending = (range.lowerBound, Self.sampleCount(data, moof: range))
            case "mdat":
                if let p = pending { result.append(Fragment(start: p.start, end: range.upperBound, frames: p.frames)) }
                pending = nil
            default: break
            }
        }
        fragments = result
    }

    /// Calls `body` with the type and full extent of every complete box directly inside `range`.
    private static func walk(_ data: Data, in range: Range<Int>, _ body: (String, Range<Int>) -> Void) {
        var offset = range.lowerBound
        while offset + 8 <= range.upperBound {
            var size = Int(uint32(data, at: offset))
            let type = String(decoding: data[(data.startIndex + offset + 4)..<(data.startIndex + offset + 8)], as: UTF8.self)
            if size == 1, offset + 16 <= range.upperBound {
                size = Int(uint32(data, at: offset + 8)) << 32 | Int(uint32(data, at: offset + 12))
            } else if size == 0 {
                size = range.upperBound - offset
            }
            guard size >= 8, offset + size <= range.upperBound else { return }
            body(type, offset..<(offset + size))
            offset += size
        }
    }

    private static func sampleCount(_ data: Data, moof: Range<Int>) -> Int {
        var frames = 0
        walk(data, in: (moof.lowerBound + 8)..<moof.upperBound) { type, traf in
            guard type == "traf" else { return }
            walk(data, in: (traf.lowerBound + 8)..<traf.upperBound) { type, trun in
                // trun: size, type, version+flags, then sample_count.
                if type == "trun", trun.count >= 16 { frames += Int(uint32(data, at: trun.lowerBound + 12)) }
            }
        }
        return frames
    }

    private static func uint32(_ data: Data, at offset: Int) -> UInt32 {
        let i = data.startIndex + offset
        return UInt32(data[i]) << 24 | UInt32(data[i + 1]) << 16 | UInt32(data[i + 2]) << 8 | UInt32(data[i + 3])
    }
}
