// A camera address as written in the configuration, and `a=control` / `Content-Base` values
// resolved against it.
@_cdecl("LLVMFuzzerTestOneInput")
public func fuzzOne(_ data: UnsafePointer<UInt8>, _ size: Int) -> Int32 {
    let text = String(decoding: UnsafeRawBufferPointer(start: data, count: size), as: UTF8.self)
    if let address = RTSPAddress(text) {
        precondition((1...65535).contains(address.port))
        _ = RTSPAddress.resolve("trackID=1", against: address.requestURL)
    }
    let halves = text.split(separator: "\n", maxSplits: 1).map(String.init)
    if halves.count == 2 { _ = RTSPAddress.resolve(halves[0], against: halves[1]) }
    return 0
}
