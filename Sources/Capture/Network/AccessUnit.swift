import Media

/// Where one picture ends and the next begins in an H.264/H.265 packet stream. A camera's
/// picture can arrive as several packets (slices; parameter sets sent before each slice), and
/// timestamps alone do not tell (the first packet of a stream may carry none): the slice header
/// does. A packet whose first slice is a picture's first slice starts a new frame.
enum AccessUnit {
    /// Whether `bytes` (Annex B) holds the first slice of a picture; nil when it holds no slice
    /// at all (parameter sets, SEI), which belongs with the picture it travels with.
    static func startsPicture(_ bytes: UnsafeRawBufferPointer, format: PixelFormat) -> Bool? {
        var i = 0
        let n = bytes.count
        while let header = nextUnit(bytes, from: &i) {
            if format == .hevc {
                guard header + 2 < n else { return nil }
                let type = (bytes[header] >> 1) & 0x3F
                // VCL NAL units: first_slice_segment_in_pic_flag is the first bit after the 2-byte header.
                if type <= 31 { return bytes[header + 2] & 0x80 != 0 }
            } else {
                guard header + 1 < n else { return nil }
                let type = bytes[header] & 0x1F
                // Slices: first_mb_in_slice is ue(v), and 0 is coded as a single 1 bit.
                if type >= 1 && type <= 5 { return bytes[header + 1] & 0x80 != 0 }
            }
        }
        return nil
    }

    /// Whether `bytes` (Annex B) holds an IDR/IRAP picture a decoder can start from.
    static func isKeyframe(_ bytes: UnsafeRawBufferPointer, format: PixelFormat) -> Bool {
        var i = 0
        while let header = nextUnit(bytes, from: &i) {
            let type = format == .hevc ? (bytes[header] >> 1) & 0x3F : bytes[header] & 0x1F
            if format == .hevc ? (16...21).contains(type) : type == 5 { return true }
        }
        return false
    }

    /// The offset of the next NAL unit's header after a start code 00 00 01 (a four-byte one
    /// ends the same way), from `i` on; nil at the end.
    private static func nextUnit(_ bytes: UnsafeRawBufferPointer, from i: inout Int) -> Int? {
        while i + 3 < bytes.count {
            if bytes[i] == 0, bytes[i + 1] == 0, bytes[i + 2] == 1 {
                i += 3
                return i
            }
            i += 1
        }
        return nil
    }
}
