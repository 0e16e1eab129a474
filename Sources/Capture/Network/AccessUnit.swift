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
        while i + 3 < n {
            // A start code 00 00 01 (a four-byte one ends the same way).
            guard bytes[i] == 0, bytes[i + 1] == 0, bytes[i + 2] == 1 else {
                i += 1
                continue
            }
            let header = i + 3
            i = header
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
}
