/// `rtsp://user:secret@host/path` → `rtsp://***@host/path`: the only form of a camera address
/// that may appear in a log, an event, an error, an answer or a listing, whatever it holds.
///
/// - Everything between `://` and the **last** `@` is masked, also an `@` past the host: a
///   password holding `/`, `?` or `#` ends the host part early (`rtsp://admin:12/34@cam/` reads
///   as host `admin`, port 12, path `/34@cam/`), so an `@` anywhere after `://` is taken for the
///   end of credentials. An address without `://` is masked up to its last `@`.
/// - The value of a parameter that names a secret (`password=`, `pwd=`, `token=`, …, as in
///   `http://cam/videostream.cgi?user=admin&pwd=secret`) is masked up to the next `&`.
public func redactedAddress(_ url: String) -> String {
    let start = url.firstRange(of: "://")?.upperBound ?? url.startIndex
    guard let at = url[start...].lastIndex(of: "@") else { return maskingSecretParameters(url) }
    return String(url[..<start]) + "***" + maskingSecretParameters(String(url[at...]))
}

/// Why the host part of a camera's `url` cannot be read as `[user[:password]@]host[:port]`, in
/// words that repeat nothing of the address; nil when it can. A password holding `/`, `?` or `#`
/// ends the host part early: the address then has an `@` after its host, or a port that is not
/// a number (`rtsp://admin:pa/ss@cam/`: host `admin`, port `pa`).
public func addressProblem(_ url: String) -> String? {
    guard let scheme = url.firstRange(of: "://") else { return "it does not start with scheme://" }
    let rest = url[scheme.upperBound...]
    let end = rest.firstIndex { "/?#".contains($0) } ?? rest.endIndex
    if rest[end...].contains("@") {
        return "an @ follows the host name, as when the password holds a / ? or #"
    }
    var hostAndPort = rest[..<end]
    if let at = hostAndPort.lastIndex(of: "@") { hostAndPort = hostAndPort[hostAndPort.index(after: at)...] }
    var host = hostAndPort
    var port: Substring?
    if hostAndPort.hasPrefix("[") {
        guard let close = hostAndPort.firstIndex(of: "]") else { return "its IPv6 address lacks the closing ]" }
        host = hostAndPort[hostAndPort.index(after: hostAndPort.startIndex)..<close]
        let after = hostAndPort[hostAndPort.index(after: close)...]
        guard after.isEmpty || after.hasPrefix(":") else { return "something follows its IPv6 address that is not :port" }
        port = after.isEmpty ? nil : after.dropFirst()
    } else if let colon = hostAndPort.lastIndex(of: ":") {
        host = hostAndPort[..<colon]
        port = hostAndPort[hostAndPort.index(after: colon)...]
    }
    if host.isEmpty { return "it has no host name" }
    if let port, !(Int(port).map { (1...65535).contains($0) } ?? false) {
        return "its port is not a number from 1 to 65535, as when the password holds a / ? or #"
    }
    return nil
}

/// Parameter names whose values are secrets, compared without case.
private let secretParameters: Set<String> = ["password", "passwd", "pass", "pwd", "psw", "secret", "token", "key", "auth"]

/// `text` with the value of every `NAME=` whose NAME (the letters before `=`) names a secret
/// replaced by `***`, up to the next `&` or `#`.
private func maskingSecretParameters(_ text: String) -> String {
    let bytes = Array(text.utf8)
    guard bytes.contains(UInt8(ascii: "=")) else { return text }
    func isLetter(_ b: UInt8) -> Bool { (b | 0x20) >= UInt8(ascii: "a") && (b | 0x20) <= UInt8(ascii: "z") }
    var out: [UInt8] = []
    out.reserveCapacity(bytes.count)
    var i = 0
    while i < bytes.count {
        out.append(bytes[i])
        i += 1
        guard bytes[i - 1] == UInt8(ascii: "=") else { continue }
        var nameStart = i - 1
        while nameStart > 0 && isLetter(bytes[nameStart - 1]) { nameStart -= 1 }
        guard secretParameters.contains(String(decoding: bytes[nameStart..<(i - 1)], as: UTF8.self).lowercased()) else { continue }
        let valueEnd = bytes[i...].firstIndex { $0 == UInt8(ascii: "&") || $0 == UInt8(ascii: "#") } ?? bytes.count
        if valueEnd > i { out.append(contentsOf: "***".utf8) }
        i = valueEnd
    }
    return String(decoding: out, as: UTF8.self)
}
