// What arrives on a streaming RTSP connection: interleaved packets, answers and junk, read the
// way the client reads them (item by item, consuming each).
@_cdecl("LLVMFuzzerTestOneInput")
public func fuzzOne(_ data: UnsafePointer<UInt8>, _ size: Int) -> Int32 {
    let bytes = UnsafeRawBufferPointer(start: data, count: size)
    var offset = 0
    while offset < size {
        guard let item = try? InterleavedFraming.next(bytes, at: offset) else { break }
        switch item {
        case .needMore:
            return 0
        case let .packet(_, data, length):
            precondition(data.upperBound <= size && length >= 4)
            if let rtp = RTPPacket(UnsafeRawBufferPointer(rebasing: bytes[data])) { precondition(rtp.payload.upperBound <= data.count) }
            offset += length
        case let .message(_, length), let .junk(length):
            precondition(length > 0)
            offset += length
        }
    }
    return 0
}
