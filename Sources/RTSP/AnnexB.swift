/// H.264/H.265 access units in Annex B (start codes before NAL units), as cameras send them:
/// where one picture ends and the next begins in a packet stream, keyframes, parameter sets. A camera's
/// picture can arrive as several packets (slices; parameter sets sent before each slice), and
/// timestamps alone do not tell (the first packet of a stream may carry none): the slice header
/// does. A packet whose first slice is a picture's first slice starts a new frame.
package enum AnnexB {
    /// Whether `bytes` (Annex B) holds the first slice of a picture; nil when it holds no slice
    /// at all (parameter sets, SEI), which belongs with the picture it travels with.
    package static func startsPicture(_ bytes: UnsafeRawBufferPointer, hevc: Bool) -> Bool? {
        var i = 0
        let n = bytes.count
        while let header = nextUnit(bytes, from: &i) {
            if hevc {
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
    package static func isKeyframe(_ bytes: UnsafeRawBufferPointer, hevc: Bool) -> Bool {
        var i = 0
        while let header = nextUnit(bytes, from: &i) {
            let type = hevc ? (bytes[header] >> 1) & 0x3F : bytes[header] & 0x1F
            if hevc ? (16...21).contains(type) : type == 5 { return true }
        }
        return false
    }

    /// Copies the parameter sets (H.264 SPS/PPS, H.265 VPS/SPS/PPS) found in `bytes` into
    /// `sets`, each once and after a start code (a picture sent in slices may repeat them before
    /// each slice); `sets` is emptied first and keeps its capacity.
    package static func parameterSets(_ bytes: UnsafeRawBufferPointer, hevc: Bool, into sets: inout [UInt8]) {
        sets.removeAll(keepingCapacity: true)
        var i = 0
        var current: Int?
        func close(at end: Int) {
            guard let start = current else { return }
            // A unit ends where the next start code begins (its zero bytes are not part of it).
            var stop = end
            while stop > start && bytes[stop - 1] == 0 { stop -= 1 }
            current = nil
            let unit = bytes[start..<stop]
            if !contains(sets, unit) {
                sets.append(contentsOf: [0, 0, 0, 1])
                sets.append(contentsOf: unit)
            }
        }
        while let header = nextUnit(bytes, from: &i) {
            close(at: header - 3)
            let type = hevc ? (bytes[header] >> 1) & 0x3F : bytes[header] & 0x1F
            let isParameterSet = hevc ? (32...34).contains(type) : type == 7 || type == 8
            if isParameterSet { current = header }
        }
        close(at: bytes.count)
    }

    /// Whether `sets` (Annex B) holds every kind of parameter set a decoder needs: SPS and PPS
    /// (H.264), VPS, SPS and PPS (H.265).
    package static func hasEveryParameterSet(_ sets: UnsafeRawBufferPointer, hevc: Bool) -> Bool {
        var seen = Set<UInt8>()
        var i = 0
        while let header = nextUnit(sets, from: &i) {
            seen.insert(hevc ? (sets[header] >> 1) & 0x3F : sets[header] & 0x1F)
        }
        return hevc ? seen.isSuperset(of: [32, 33, 34]) : seen.isSuperset(of: [7, 8])
    }

    /// Whether `sets` already holds `unit` as a whole unit (start code, the bytes, then the end
    /// or the next start code).
    private static func contains(_ sets: [UInt8], _ unit: Slice<UnsafeRawBufferPointer>) -> Bool {
        var i = 0
        while i + 4 + unit.count <= sets.count {
            if sets[i] == 0, sets[i + 1] == 0, sets[i + 2] == 0, sets[i + 3] == 1 {
                let end = i + 4 + unit.count
                if (end == sets.count || (sets[end] == 0 && end + 3 < sets.count && sets[end + 3] == 1)) && sets[(i + 4)..<end].elementsEqual(unit) {
                    return true
                }
            }
            i += 1
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

