// sources: Sources/Recorder/Configuration/WebAuthority.swift
// What a browser or any client sends as `Host`, `Origin` or `Referer`: refused, or a host the
// configuration would accept and a port in 1...65535, read again the same way.
@_cdecl("LLVMFuzzerTestOneInput")
public func fuzzOne(_ data: UnsafePointer<UInt8>, _ size: Int) -> Int32 {
    let text = String(decoding: UnsafeRawBufferPointer(start: data, count: size), as: UTF8.self)
    if let (host, port) = WebAuthority.split(text) {
        precondition(WebAuthority.hostName(host) == host)
        if let port { precondition((1...65535).contains(port)) }
    }
    if let origin = WebOrigin(text) {
        precondition((1...65535).contains(origin.port) && ["http", "https"].contains(origin.scheme))
        let written = origin.host.contains(":") ? "[\(origin.host)]" : origin.host
        precondition(WebOrigin("\(origin.scheme)://\(written):\(origin.port)") == origin, "\(origin) does not read back")
    }
    return 0
}
