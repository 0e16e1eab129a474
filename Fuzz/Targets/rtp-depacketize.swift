// RTP packets (each behind a 2-byte length) through the header parser, the H.264 or H.265
// depacketizer (the first byte chooses), the timestamp unwrapper and the decode timeline.
@_cdecl("LLVMFuzzerTestOneInput")
public func fuzzOne(_ data: UnsafePointer<UInt8>, _ size: Int) -> Int32 {
    let bytes = UnsafeRawBufferPointer(start: data, count: size)
    guard size >= 2 else { return 0 }
    var depacketizer = NALDepacketizer(isHEVC: bytes[0] & 1 == 1)
    var timeline = DecodeTimeline(depth: Int(bytes[1] & 0x0F), frameTicks: Int64(bytes[1]) << 12)
    var unwrapper = RTPTimestampUnwrapper()
    var times: [Int64] = []
    var offset = 2
    var pictureBytes = 0
    while offset + 2 <= size {
        let length = Int(bytes[offset]) << 8 | Int(bytes[offset + 1])
        offset += 2
        let end = min(offset + length, size)
        if let rtp = RTPPacket(UnsafeRawBufferPointer(rebasing: bytes[offset..<end])) {
            let payload = (offset + rtp.payload.lowerBound)..<(offset + rtp.payload.upperBound)
            precondition(payload.upperBound <= end)
            _ = depacketizer.depacketize(UnsafeRawBufferPointer(rebasing: bytes[payload])) {
                pictureBytes += $0.count
            }
            let time = unwrapper.extend(rtp.timestamp)
            precondition(time.magnitude <= UInt64(RTPTimestampUnwrapper.bound))
            precondition(timeline.decodeTime(presentedAt: time) <= time)
            times.append(time)
            if rtp.marker { depacketizer.startPicture() }
        }
        offset = end
    }
    _ = DecodeTimeline.depth(of: Array(times.prefix(9)))
    _ = DecodeTimeline.frameTicks(of: Array(times.prefix(9)))
    return 0
}
