// Host names, authorities and origins as HTTP carries them (`Host`, `Origin`, `Referer`):
// pure and bounded, with the standard library alone, so the fuzz target `web-origin` compiles
// this file by itself.

/// A `Host` value or an origin's authority, read.
public enum WebAuthority {
    /// A host name or address as `Host` carries it, lower-cased, without brackets; nil when
    /// `text` holds anything else (a scheme, a port, a path, spaces).
    public static func hostName(_ text: String) -> String? {
        var host = text.lowercased()
        let bracketed = host.hasPrefix("[") && host.hasSuffix("]")
        if bracketed { host = String(host.dropFirst().dropLast()) }
        let colons = host.filter { $0 == ":" }.count
        // An IPv6 address has at least two colons; one colon is HOST:PORT, which is not a host.
        guard !host.isEmpty, host.count <= 253, colons == 0 ? !bracketed : colons >= 2,
              host.allSatisfy({ ($0.isASCII && ($0.isLetter || $0.isNumber)) || $0 == "." || $0 == "-" || $0 == ":" }) else { return nil }
        // A name's labels are not empty ("a..b", ".a", "a."): found by the fuzz target, where
        // "a.." read as "a." and, written back, as "a".
        if colons == 0, host.hasPrefix(".") || host.hasSuffix(".") || host.contains("..") { return nil }
        return host
    }

    /// The host and port (nil: none given) of a `Host` value or an origin's authority.
    public static func split(_ authority: String) -> (host: String, port: Int?)? {
        guard authority.utf8.count <= 300 else { return nil }
        var text = Substring(authority.lowercased())
        var port: Substring?
        if text.hasPrefix("[") {
            guard let end = text.firstIndex(of: "]") else { return nil }
            let rest = text[text.index(after: end)...]
            guard rest.isEmpty || (rest.hasPrefix(":") && rest.dropFirst().allSatisfy(\.isNumber)) else { return nil }
            port = rest.isEmpty ? nil : rest.dropFirst()
            text = text[text.index(after: text.startIndex)..<end]
        } else if let colon = text.firstIndex(of: ":") {
            guard text[text.index(after: colon)...].allSatisfy(\.isNumber) else { return nil }
            port = text[text.index(after: colon)...]
            text = text[..<colon]
        }
        // A name's trailing dot (`localhost.`); an address in brackets has none.
        if !authority.hasPrefix("["), text.hasSuffix(".") { text = text.dropLast() }
        guard let host = hostName(String(text)) else { return nil }
        guard let port else { return (host, nil) }
        // Digits only (checked above), at most 5 of them, 1...65535: read before any arithmetic.
        guard (1...5).contains(port.count), let number = Int(port), (1...65535).contains(number) else { return nil }
        return (host, number)
    }
}

/// An origin as a browser sends it in `Origin` or `Referer`: scheme, host and port (the
/// scheme's own port when none is written).
public struct WebOrigin: Equatable, Sendable {
    public let scheme: String
    public let host: String
    public let port: Int

    /// nil for anything but an http(s) URL with a host (`null`, `file:`, garbage). Only the
    /// scheme and authority are read (a `Referer`'s path and query may be long), by the same
    /// rules as `Host` (`WebAuthority.split`): a port is 1...65535 in at most 5 digits.
    public init?(_ text: String) {
        let schemeText = text.prefix { $0 != ":" }
        guard schemeText.count <= 8, text.dropFirst(schemeText.count).hasPrefix("://"),
              let defaultPort = Self.defaultPorts[schemeText.lowercased()] else { return nil }
        let authority = text.dropFirst(schemeText.count + 3).prefix { $0 != "/" && $0 != "?" && $0 != "#" }
        // User information ("user@host") is no part of an origin.
        guard authority.utf8.count <= 300, !authority.contains("@"), let (host, port) = WebAuthority.split(String(authority)) else { return nil }
        (scheme, self.host, self.port) = (schemeText.lowercased(), host, port ?? defaultPort)
    }

    public var defaultPort: Int { Self.defaultPorts[scheme] ?? 80 }

    static let defaultPorts = ["http": 80, "https": 443]
}
