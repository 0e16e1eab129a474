/// An `rtsp://[user[:password]@]host[:port]/path` address taken apart: where to connect, what
/// to ask for (the address without its credentials, which never go on the wire as text), and
/// who to be. User and password are percent-decoded, as written into the configuration.
package struct RTSPAddress: Equatable, Sendable {
    package var host: String
    package var port: Int
    /// The address as requests name it: no credentials.
    package var requestURL: String
    package var user: String?
    package var password: String?

    package init?(_ url: String) {
        guard let schemeEnd = url.firstRange(of: "://"), url[..<schemeEnd.lowerBound].lowercased() == "rtsp" else { return nil }
        let rest = url[schemeEnd.upperBound...]
        let authorityEnd = rest.firstIndex { "/?#".contains($0) } ?? rest.endIndex
        var authority = rest[..<authorityEnd]
        let path = rest[authorityEnd...]
        if let at = authority.lastIndex(of: "@") {
            let credentials = authority[..<at]
            authority = authority[authority.index(after: at)...]
            if let colon = credentials.firstIndex(of: ":") {
                user = Self.percentDecoded(credentials[..<colon])
                password = Self.percentDecoded(credentials[credentials.index(after: colon)...])
            } else {
                user = Self.percentDecoded(credentials)
            }
        }
        var hostPart = authority
        var portText: Substring?
        if authority.hasPrefix("[") {  // [IPv6]:port
            guard let close = authority.firstIndex(of: "]") else { return nil }
            hostPart = authority[authority.index(after: authority.startIndex)..<close]
            let after = authority[authority.index(after: close)...]
            if after.hasPrefix(":") { portText = after.dropFirst() }
        } else if let colon = authority.lastIndex(of: ":") {
            hostPart = authority[..<colon]
            portText = authority[authority.index(after: colon)...]
        }
        guard !hostPart.isEmpty else { return nil }
        host = String(hostPart)
        if let portText {
            guard let p = Int(portText), (1...65535).contains(p) else { return nil }
            port = p
        } else {
            port = 554
        }
        let pathWithoutFragment = path.prefix { $0 != "#" }
        requestURL = "rtsp://" + String(authority) + (pathWithoutFragment.isEmpty ? "/" : String(pathWithoutFragment))
    }

    /// `%XX` escapes replaced by their bytes (a malformed escape stays as written).
    package static func percentDecoded(_ text: Substring) -> String {
        var bytes = [UInt8]()
        var utf8 = Array(text.utf8)[...]
        while let byte = utf8.popFirst() {
            if byte == UInt8(ascii: "%"), utf8.count >= 2,
               let value = UInt8(String(decoding: utf8.prefix(2), as: UTF8.self), radix: 16) {
                bytes.append(value)
                utf8 = utf8.dropFirst(2)
            } else {
                bytes.append(byte)
            }
        }
        return String(decoding: bytes, as: UTF8.self)
    }

    /// `reference` (an SDP `a=control`, a `Content-Base`) made absolute against `base`, the
    /// request's URL. Some cameras send a `Content-Base` without its scheme
    /// (`192.168.1.5:554/stream0/`): a first segment that names a host (`host:port`, or an IPv4
    /// address) is replaced by the request's scheme, host and port, so every later request goes
    /// to an absolute URL on the host Vigil connected to (a strict camera refuses any other).
    package static func resolve(_ reference: String, against base: String) -> String {
        if reference.isEmpty || reference == "*" { return base }
        let lowered = reference.lowercased()
        if lowered.hasPrefix("rtsp://") || lowered.hasPrefix("rtsps://") { return reference }
        let firstSegment = reference.prefix { $0 != "/" }
        if namesAHost(firstSegment), let schemeEnd = base.firstRange(of: "://") {
            let authorityEnd = base[schemeEnd.upperBound...].firstIndex(of: "/") ?? base.endIndex
            return String(base[..<authorityEnd]) + reference.dropFirst(firstSegment.count)
        }
        if reference.hasPrefix("/") {
            guard let schemeEnd = base.firstRange(of: "://") else { return reference }
            let authorityEnd = base[schemeEnd.upperBound...].firstIndex(of: "/") ?? base.endIndex
            return String(base[..<authorityEnd]) + reference
        }
        return base.hasSuffix("/") ? base + reference : base + "/" + reference
    }

    /// `host:port` (a port of digits) or a dotted IPv4 address: the start of a URL without its scheme.
    private static func namesAHost(_ segment: Substring) -> Bool {
        if let colon = segment.lastIndex(of: ":") {
            let port = segment[segment.index(after: colon)...]
            return colon != segment.startIndex && !port.isEmpty && port.count <= 5 && port.allSatisfy(\.isASCIIDigit)
        }
        let parts = segment.split(separator: ".", omittingEmptySubsequences: false)
        return parts.count == 4 && parts.allSatisfy { !$0.isEmpty && $0.count <= 3 && $0.allSatisfy(\.isASCIIDigit) }
    }
}
