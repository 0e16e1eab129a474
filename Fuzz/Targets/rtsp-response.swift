// An RTSP answer as a camera sends it: the parser, then every header a client reads from it.
@_cdecl("LLVMFuzzerTestOneInput")
public func fuzzOne(_ data: UnsafePointer<UInt8>, _ size: Int) -> Int32 {
    let bytes = UnsafeRawBufferPointer(start: data, count: size)
    guard let (response, length) = try? RTSPResponse.parse(bytes) else { return 0 }
    precondition(length <= size)
    _ = response.header("cseq")
    if let session = response.header("session"), let header = try? SessionHeader(session) {
        precondition((2...30).contains(header.keepaliveSeconds))
    }
    _ = try? interleavedChannel(transport: response.header("transport"))
    if let rtpInfo = response.header("rtp-info") {
        let info = RTPInfo(rtpInfo)
        precondition(info.entries.count <= RTPInfo.maxEntries)
        _ = info.firstSequence(control: "rtsp://camera/track1")
    }
    _ = CameraText.quoted(response.reason)
    return 0
}
