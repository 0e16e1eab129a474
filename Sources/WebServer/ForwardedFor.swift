import Glibc

/// What a trusted reverse proxy says of its client (`ClientAddressMiddleware`), read from
/// headers any client can write: so read strictly, with the standard library and the C
/// library only (the `forwarded-for` fuzz target compiles this file alone).
enum ForwardedFor {
    /// The client of `X-Forwarded-For`: its last address, the one the trusted proxy itself saw
    /// (earlier ones were written by whoever sent the request). Nil unless that is an IPv4 or
    /// IPv6 address (brackets and spaces around it dropped), never a name or a port.
    static func client(_ header: String) -> String? {
        guard header.utf8.count <= 4096, let last = header.split(separator: ",", omittingEmptySubsequences: false).last else { return nil }
        let address = bare(String(last))
        return isAddress(address) ? address : nil
    }

    /// True when `X-Forwarded-Proto`'s last value is https.
    static func isHTTPS(_ header: String) -> Bool {
        guard header.utf8.count <= 4096, let last = header.split(separator: ",", omittingEmptySubsequences: false).last else { return false }
        return last.trimmingSpaces().lowercased() == "https"
    }

    /// An address without spaces or IPv6 brackets.
    static func bare(_ text: String) -> String {
        var text = Substring(text).trimmingSpaces()
        if text.hasPrefix("[") && text.hasSuffix("]") && text.count >= 2 { text = text.dropFirst().dropLast() }
        return String(text)
    }

    /// True for an IPv4 or IPv6 address as written. Its characters are checked before
    /// `inet_pton` reads it: the C string ends at a NUL, so "2001::" followed by a NUL and
    /// anything else would have passed (the fuzz target found it).
    static func isAddress(_ text: String) -> Bool {
        guard !text.isEmpty, text.utf8.count <= 45, text.utf8.allSatisfy({ isHexDigit($0) || $0 == UInt8(ascii: ".") || $0 == UInt8(ascii: ":") }) else {
            return false
        }
        var v4 = in_addr(), v6 = in6_addr()
        return inet_pton(AF_INET, text, &v4) == 1 || inet_pton(AF_INET6, text, &v6) == 1
    }

    private static func isHexDigit(_ c: UInt8) -> Bool {
        (48...57).contains(c) || (65...70).contains(c) || (97...102).contains(c)
    }
}

extension Substring {
    fileprivate func trimmingSpaces() -> Substring {
        var text = self
        while let first = text.first, first == " " || first == "\t" { text = text.dropFirst() }
        while let last = text.last, last == " " || last == "\t" { text = text.dropLast() }
        return text
    }
}
