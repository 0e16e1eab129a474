// `WWW-Authenticate` challenges (one a line) as a camera sends them, answered twice.
@_cdecl("LLVMFuzzerTestOneInput")
public func fuzzOne(_ data: UnsafePointer<UInt8>, _ size: Int) -> Int32 {
    let text = String(decoding: UnsafeRawBufferPointer(start: data, count: size), as: UTF8.self)
    let challenges = text.split(separator: "\n").map(String.init)
    _ = RTSPAuthorization.parameters(text[...])
    if var answer = RTSPAuthorization(challenges: challenges, user: "user", password: "p@ss:/?#%") {
        _ = answer.value(method: "DESCRIBE", url: "rtsp://127.0.0.1/")
        _ = answer.value(method: "SETUP", url: "rtsp://127.0.0.1/track1")
    }
    return 0
}
