// An SDP (DESCRIBE's body) as a camera sends it.
@_cdecl("LLVMFuzzerTestOneInput")
public func fuzzOne(_ data: UnsafePointer<UInt8>, _ size: Int) -> Int32 {
    let description = SessionDescription(String(decoding: UnsafeRawBufferPointer(start: data, count: size), as: UTF8.self))
    if let video = description.video {
        precondition(video.parameterSets.count <= RTSPLimits.parameterSetBytes)
        if let rate = video.frameRate { precondition(rate > 0 && rate <= 1000) }
        _ = RTSPAddress.resolve(video.control, against: "rtsp://127.0.0.1/stream/")
    }
    return 0
}
