/// The fixed RTP header (RFC 3550) of one packet and where its payload lies.
package struct RTPPacket {
    package var marker: Bool
    package var payloadType: Int
    package var sequence: UInt16
    package var timestamp: UInt32
    /// Which stream the packet belongs to (RFC 3550 §5.1): a stale packet of an earlier session has another.
    package var ssrc: UInt32
    /// The payload, without CSRCs, header extension and padding.
    package var payload: Range<Int>

    /// Nil for bytes that are not an RTP version 2 packet.
    package init?(_ bytes: UnsafeRawBufferPointer) {
        guard bytes.count >= 12, bytes[0] >> 6 == 2 else { return nil }
        marker = bytes[1] & 0x80 != 0
        payloadType = Int(bytes[1] & 0x7F)
        sequence = UInt16(bytes[2]) << 8 | UInt16(bytes[3])
        timestamp = UInt32(bytes[4]) << 24 | UInt32(bytes[5]) << 16 | UInt32(bytes[6]) << 8 | UInt32(bytes[7])
        ssrc = UInt32(bytes[8]) << 24 | UInt32(bytes[9]) << 16 | UInt32(bytes[10]) << 8 | UInt32(bytes[11])
        var start = 12 + 4 * Int(bytes[0] & 0x0F)
        if bytes[0] & 0x10 != 0 {
            guard bytes.count >= start + 4 else { return nil }
            start += 4 + 4 * (Int(bytes[start + 2]) << 8 | Int(bytes[start + 3]))
        }
        var end = bytes.count
        if bytes[0] & 0x20 != 0 { end -= Int(bytes[bytes.count - 1]) }
        guard start <= end else { return nil }
        payload = start..<end
    }
}

/// Turns H.264 (RFC 6184) and H.265 (RFC 7798) RTP payloads into Annex B NAL units: single
/// units, aggregation packets (STAP-A, AP) and fragmentation units (FU-A, FU), the common
/// packetizations of cameras. The bytes go to `emit` in pieces, without copies of their own.
package struct NALDepacketizer {
    package let isHEVC: Bool
    /// A fragmented unit is being put together (its start was seen, its end not yet).
    package private(set) var inFragment = false
    /// The picture's units so far include an IDR (H.264) or IRAP (H.265) slice.
    package var sawKeyframe = false
    /// The picture's units so far include a slice.
    package var sawSlice = false

    package init(isHEVC: Bool) { self.isHEVC = isHEVC }

    /// Clears the per-picture flags.
    package mutating func startPicture() {
        sawKeyframe = false
        sawSlice = false
        inFragment = false
    }

    /// Emits the NAL units in `payload`; false for a payload it cannot read (an unknown
    /// packetization, a fragment whose start was lost), whose picture should be dropped.
    package mutating func depacketize(_ payload: UnsafeRawBufferPointer, emit: (UnsafeRawBufferPointer) -> Void) -> Bool {
        let headerSize = isHEVC ? 2 : 1
        guard payload.count > headerSize else { return payload.count == 0 }
        let type = isHEVC ? Int(payload[0] >> 1) & 0x3F : Int(payload[0] & 0x1F)
        switch (isHEVC, type) {
        case (false, 1...23), (true, 0...47):
            unit(UnsafeRawBufferPointer(rebasing: payload[0...]), emit: emit)
        case (false, 24), (true, 48):  // STAP-A, AP: 16-bit size before each unit
            var i = headerSize
            while i + 2 <= payload.count {
                let size = Int(payload[i]) << 8 | Int(payload[i + 1])
                i += 2
                guard size > 0, i + size <= payload.count else { return false }
                unit(UnsafeRawBufferPointer(rebasing: payload[i..<(i + size)]), emit: emit)
                i += size
            }
            guard i == payload.count else { return false }  // a stray byte: the sizes are off
        case (false, 28), (true, 49):  // FU-A, FU
            let fuHeader = payload[headerSize]
            let start = fuHeader & 0x80 != 0, end = fuHeader & 0x40 != 0
            let body = UnsafeRawBufferPointer(rebasing: payload[(headerSize + 1)...])
            if start {
                // A new unit while one is open: the open one lost its end, and was emitted cut short.
                if inFragment { return false }
                var header: (UInt8, UInt8, UInt8, UInt8, UInt8, UInt8)
                if isHEVC {
                    header = (0, 0, 0, 1, (payload[0] & 0x81) | ((fuHeader & 0x3F) << 1), payload[1])
                } else {
                    header = (0, 0, 0, 1, (payload[0] & 0xE0) | (fuHeader & 0x1F), 0)
                }
                let nalType = isHEVC ? Int(fuHeader & 0x3F) : Int(fuHeader & 0x1F)
                note(nalType)
                withUnsafeBytes(of: &header) { emit(UnsafeRawBufferPointer(rebasing: $0[0..<(4 + headerSize)])) }
                inFragment = true
            } else if !inFragment {
                return false
            }
            emit(body)
            if end { inFragment = false }
        default:
            return false
        }
        return true
    }

    private mutating func unit(_ nal: UnsafeRawBufferPointer, emit: (UnsafeRawBufferPointer) -> Void) {
        note(isHEVC ? Int(nal[0] >> 1) & 0x3F : Int(nal[0] & 0x1F))
        var startCode: (UInt8, UInt8, UInt8, UInt8) = (0, 0, 0, 1)
        withUnsafeBytes(of: &startCode) { emit($0) }
        emit(nal)
    }

    private mutating func note(_ nalType: Int) {
        if isHEVC {
            if nalType <= 31 { sawSlice = true }
            if (16...21).contains(nalType) { sawKeyframe = true }
        } else {
            if (1...5).contains(nalType) { sawSlice = true }
            if nalType == 5 { sawKeyframe = true }
        }
    }
}
