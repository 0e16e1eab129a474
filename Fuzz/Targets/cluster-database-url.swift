// sources: Sources/Recorder/Configuration/ClusterDatabaseURL.swift Sources/Recorder/Configuration/LoopbackHost.swift
// `[cluster] database` as written in the configuration file: refused with a reason, or parts
// that are in range and written back to the same URL.
@_cdecl("LLVMFuzzerTestOneInput")
public func fuzzOne(_ data: UnsafePointer<UInt8>, _ size: Int) -> Int32 {
    let text = String(decoding: UnsafeRawBufferPointer(start: data, count: size), as: UTF8.self)
    do {
        let url = try ClusterDatabaseURL(text)
        precondition((1...65535).contains(url.port))
        precondition(!url.user.isEmpty && !url.host.isEmpty && !url.database.isEmpty)
        precondition((try? ClusterDatabaseURL(url.description)) == url, "\(url) does not read back")
        _ = url.isLoopback
    } catch {
        precondition(!error.description.isEmpty)
    }
    return 0
}
