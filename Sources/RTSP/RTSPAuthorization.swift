/// The `Authorization` header a server asked for in its `WWW-Authenticate` challenge: Basic
/// (RFC 7617) or Digest with MD5 (RFC 2617, with or without `qop=auth`), which most cameras use.
package struct RTSPAuthorization {
    private enum Scheme {
        case basic
        case digest(realm: String, nonce: String, opaque: String?, qop: Bool)
    }
    private let scheme: Scheme
    private let user: String
    private let password: String
    private var count: UInt32 = 0

    /// Nil for a challenge Vigil cannot answer (an unknown scheme, a Digest algorithm other than MD5).
    package init?(challenges: [String], user: String, password: String) {
        self.user = user
        self.password = password
        // Digest when offered: it does not send the password.
        if let digest = challenges.first(where: { $0.lowercased().hasPrefix("digest") }) {
            let p = Self.parameters(digest.dropFirst(6))
            guard let realm = p["realm"], let nonce = p["nonce"], (p["algorithm"] ?? "MD5").uppercased() == "MD5" else { return nil }
            let qop = p["qop"].map { $0.split(separator: ",").contains { $0.trimmingSpaces == "auth" } } ?? false
            scheme = .digest(realm: realm, nonce: nonce, opaque: p["opaque"], qop: qop)
        } else if challenges.contains(where: { $0.lowercased().hasPrefix("basic") }) {
            scheme = .basic
        } else {
            return nil
        }
    }

    /// The header's value for one request.
    package mutating func value(method: String, url: String) -> String {
        switch scheme {
        case .basic:
            return "Basic " + Base64.encode(Array("\(user):\(password)".utf8))
        case let .digest(realm, nonce, opaque, qop):
            let ha1 = MD5.hex("\(user):\(realm):\(password)")
            let ha2 = MD5.hex("\(method):\(url)")
            var value = "Digest username=\"\(user)\", realm=\"\(realm)\", nonce=\"\(nonce)\", uri=\"\(url)\""
            if qop {
                count &+= 1
                let nc = String(count, radix: 16)
                let nonceCount = String(repeating: "0", count: max(0, 8 - nc.count)) + nc
                let cnonce = String(UInt64.random(in: 0...UInt64.max), radix: 16)
                let response = MD5.hex("\(ha1):\(nonce):\(nonceCount):\(cnonce):auth:\(ha2)")
                value += ", response=\"\(response)\", qop=auth, nc=\(nonceCount), cnonce=\"\(cnonce)\""
            } else {
                value += ", response=\"\(MD5.hex("\(ha1):\(nonce):\(ha2)"))\""
            }
            if let opaque { value += ", opaque=\"\(opaque)\"" }
            return value + ", algorithm=MD5"
        }
    }

    /// `key="value", key=value` pairs; keys lowercased.
    package static func parameters(_ text: Substring) -> [String: String] {
        var result: [String: String] = [:]
        var rest = text[...]
        while true {
            rest = rest.drop { $0 == " " || $0 == "," || $0 == "\t" }
            guard let equals = rest.firstIndex(of: "=") else { break }
            let key = rest[..<equals].trimmingSpaces.lowercased()
            rest = rest[rest.index(after: equals)...].drop { $0 == " " }
            let value: Substring
            if rest.first == "\"" {
                rest = rest.dropFirst()
                let close = rest.firstIndex(of: "\"") ?? rest.endIndex
                value = rest[..<close]
                rest = close < rest.endIndex ? rest[rest.index(after: close)...] : rest[close...]
            } else {
                let comma = rest.firstIndex(of: ",") ?? rest.endIndex
                value = rest[..<comma]
                rest = rest[comma...]
            }
            result[key] = String(value.trimmingSpaces)
        }
        return result
    }
}
