/// What lies at the front of the bytes received on an RTSP connection that carries RTP
/// interleaved (RFC 2326 §10.12): a packet (`$`, channel, 16-bit length, data), an RTSP message
/// (an answer to a keep-alive, a request from the server), or bytes that are neither.
package enum InterleavedItem {
    /// Nothing whole yet: receive more.
    case needMore
    /// A packet: its channel, where its data lies in the bytes, and its whole length.
    case packet(channel: UInt8, data: Range<Int>, length: Int)
    case message(RTSPResponse, length: Int)
    /// Bytes that are neither, up to the next `$`: to be skipped (and counted).
    case junk(length: Int)
}

package enum InterleavedFraming {
    /// The item at `offset` in `bytes`. An interleaved packet is at most 4 + 65535 bytes, so it
    /// always fits in a receive buffer larger than that; a message is bounded by `RTSPLimits`.
    package static func next(_ bytes: UnsafeRawBufferPointer, at offset: Int = 0) throws(RTSPViolation) -> InterleavedItem {
        guard offset < bytes.count else { return .needMore }
        let first = bytes[offset]
        if first == UInt8(ascii: "$") {
            guard bytes.count - offset >= 4 else { return .needMore }
            let length = 4 + (Int(bytes[offset + 2]) << 8 | Int(bytes[offset + 3]))
            guard bytes.count - offset >= length else { return .needMore }
            return .packet(channel: bytes[offset + 1], data: (offset + 4)..<(offset + length), length: length)
        }
        if (UInt8(ascii: "A")...UInt8(ascii: "Z")).contains(first) {
            guard let (message, length) = try RTSPResponse.parse(UnsafeRawBufferPointer(rebasing: bytes[offset...])) else { return .needMore }
            return .message(message, length: length)
        }
        let next = bytes[offset...].firstIndex(of: UInt8(ascii: "$")) ?? bytes.count
        return .junk(length: next - offset)
    }
}
