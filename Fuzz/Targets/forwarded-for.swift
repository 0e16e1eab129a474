// sources: Sources/WebServer/ForwardedFor.swift
// X-Forwarded-For and X-Forwarded-Proto as any client may write them (only a trusted proxy's
// are believed): an address that reads back as itself, or nothing; never a trap.
@_cdecl("LLVMFuzzerTestOneInput")
public func fuzzOne(_ data: UnsafePointer<UInt8>, _ size: Int) -> Int32 {
    let text = String(decoding: UnsafeRawBufferPointer(start: data, count: size), as: UTF8.self)
    if let client = ForwardedFor.client(text) {
        precondition(ForwardedFor.isAddress(client) && !client.contains(",") && !client.contains(" "))
        precondition(ForwardedFor.client(client) == client, "\(client) does not read back")
    }
    _ = ForwardedFor.isHTTPS(text)
    return 0
}
