/// `[cluster] database`: where the catalogue is, as `postgresql://USER@HOST[:PORT]/DATABASE`.
/// Parsed here because postgres-nio takes its parts, not a URL. A password is refused: a URL is
/// printed in logs and error messages, so the password comes from `password_file` or the
/// `PGPASSWORD` environment variable instead. Every part is checked (characters, lengths, the
/// port's range) before use, so a wrong value is one clear error, never a trap.
public struct ClusterDatabaseURL: Sendable, Equatable, CustomStringConvertible {
    public let user: String
    public let host: String
    public let port: Int
    public let database: String

    /// PostgreSQL's default port, when the URL names none.
    public static let defaultPort = 5432
    /// PostgreSQL cuts identifiers (role and database names) at 63 bytes.
    static let maxNameLength = 63
    /// A DNS name is at most 253 characters.
    static let maxHostLength = 253
    static let maxLength = 512

    /// Why a URL was refused, with what to write instead.
    public struct Invalid: Error, Sendable, Equatable, CustomStringConvertible {
        public let description: String
    }

    public init(_ text: String) throws(Invalid) {
        guard text.utf8.count <= Self.maxLength else { throw Self.invalid("is longer than \(Self.maxLength) characters") }
        let rest: Substring
        if text.hasPrefix("postgresql://") {
            rest = text.dropFirst("postgresql://".count)
        } else if text.hasPrefix("postgres://") {
            rest = text.dropFirst("postgres://".count)
        } else {
            throw Self.invalid("must start with postgresql://, as in postgresql://vigil@db.example.net/vigil")
        }
        guard !rest.contains("?"), !rest.contains("#") else {
            throw Self.invalid("has options (after ? or #), which Vigil does not read: write postgresql://USER@HOST[:PORT]/DATABASE")
        }
        guard let at = rest.lastIndex(of: "@") else {
            throw Self.invalid("names no user: write postgresql://USER@HOST[:PORT]/DATABASE")
        }
        let userInfo = rest[..<at]
        guard !userInfo.contains(":") else {
            throw Self.invalid("holds a password, which would be printed wherever the URL is: remove it and put the password in password_file or the PGPASSWORD environment variable")
        }
        guard let slash = rest[at...].firstIndex(of: "/") else {
            throw Self.invalid("names no database: write postgresql://USER@HOST[:PORT]/DATABASE")
        }
        let hostAndPort = rest[rest.index(after: at)..<slash]
        let database = rest[rest.index(after: slash)...]
        user = try Self.name(userInfo, "user")
        self.database = try Self.name(database, "database")
        (host, port) = try Self.hostAndPort(hostAndPort)
    }

    /// The URL as written back (it holds no secret).
    public var description: String {
        let shownHost = host.contains(":") ? "[\(host)]" : host
        return "postgresql://\(user)@\(shownHost):\(port)/\(database)"
    }

    /// Whether the server is on this machine, where TLS protects nothing.
    public var isLoopback: Bool { LoopbackHost.contains(host) }

    private static func invalid(_ why: String) -> Invalid {
        Invalid(description: "[cluster] database \(why)")
    }

    /// A role or database name: letters, digits, `_`, `-`, `.`, at most 63 bytes.
    private static func name(_ text: Substring, _ what: String) throws(Invalid) -> String {
        guard !text.isEmpty else { throw invalid("has an empty \(what) name") }
        guard text.utf8.count <= maxNameLength else { throw invalid("has a \(what) name longer than \(maxNameLength) bytes") }
        guard text.allSatisfy({ $0.isASCII && ($0.isLetter || $0.isNumber || "_-.".contains($0)) }) else {
            throw invalid("has a \(what) name with characters other than letters, digits, _, - and .")
        }
        return String(text)
    }

    private static func hostAndPort(_ text: Substring) throws(Invalid) -> (String, Int) {
        var host = text
        var portText: Substring?
        if text.hasPrefix("[") {
            guard let close = text.firstIndex(of: "]") else { throw invalid("has an IPv6 address without its closing ]") }
            host = text[text.index(after: text.startIndex)..<close]
            let after = text[text.index(after: close)...]
            if !after.isEmpty {
                guard after.hasPrefix(":") else { throw invalid("has characters after the IPv6 address's ]") }
                portText = after.dropFirst()
            }
            guard !host.isEmpty, host.allSatisfy({ $0.isHexDigit || $0 == ":" || $0 == "." }) else {
                throw invalid("has an IPv6 address that is not one")
            }
        } else {
            if let colon = text.firstIndex(of: ":") {
                host = text[..<colon]
                portText = text[text.index(after: colon)...]
            }
            guard host.allSatisfy({ $0.isASCII && ($0.isLetter || $0.isNumber || $0 == "-" || $0 == ".") }) else {
                throw invalid("has a host with characters other than letters, digits, - and .")
            }
        }
        guard !host.isEmpty else { throw invalid("names no host") }
        guard host.utf8.count <= maxHostLength else { throw invalid("has a host name longer than \(maxHostLength) characters") }
        guard let portText else { return (String(host), defaultPort) }
        // At most 5 digits before converting, so the conversion itself cannot overflow.
        guard (1...5).contains(portText.count), portText.allSatisfy({ $0.isASCII && $0.isNumber }),
              let port = Int(portText), (1...65_535).contains(port)
        else { throw invalid("has port \(portText.prefix(8)), which is not a number from 1 to 65535") }
        return (String(host), port)
    }
}
