import Foundation
import Glibc

/// Several recorders sharing one catalogue in PostgreSQL (`[cluster]`): the same file on every
/// node, each node named by its host name unless `node` (or `VIGIL_NODE`) says otherwise. Read
/// at start, like `[archive]`.
public struct ClusterSettings: Sendable, Equatable {
    /// The database, as `postgresql://USER@HOST[:PORT]/DATABASE` names it (never with a password).
    public var database: DatabaseAddress
    public var passwordFile: String?
    /// From `password_file` or `PGPASSWORD`; nil: the server asks for none (trust, peer). Never printed.
    public var password: Password?
    /// This node's name: unique in the cluster, in `[a-z0-9._-]`, 1–63 characters.
    public var node: String
    /// How long a camera's lease lasts without renewal (renewed every third of it).
    public var leaseSeconds = ClusterSettings.defaultLeaseSeconds
    /// The line of `[cluster]` in the configuration file, for errors found later.
    public var line = 0

    public static let defaultLeaseSeconds = 15
    /// The environment variable that names the node, over `node` and the host name (several
    /// nodes on one machine, as the tests run them).
    public static let nodeVariable = "VIGIL_NODE"
    static let keys = ["database", "password_file", "node", "lease_seconds"]

    public init(database: DatabaseAddress, node: String) {
        self.database = database
        self.node = node
    }

    /// A database password: compared, never printed.
    public struct Password: Sendable, Equatable, CustomStringConvertible, CustomDebugStringConvertible {
        public var value: String
        /// "a file" or "PGPASSWORD", for the summary.
        public var source: String
        public var description: String { "password from \(source)" }
        public var debugDescription: String { "Password(***, from: \(source))" }
    }

    /// Where the database is. TLS is off on loopback and required elsewhere, unless `sslmode` says.
    public struct DatabaseAddress: Sendable, Equatable, CustomStringConvertible {
        public var user: String
        public var host: String
        public var port = 5432
        public var name: String
        public var requiresTLS: Bool

        public init(user: String, host: String, port: Int = 5432, name: String, requiresTLS: Bool) {
            (self.user, self.host, self.port, self.name, self.requiresTLS) = (user, host, port, name, requiresTLS)
        }

        /// `postgresql://USER@HOST:PORT/DATABASE`, for messages.
        public var description: String {
            "postgresql://\(user)@\(host.contains(":") ? "[\(host)]" : host):\(port)/\(name)"
        }
    }

    /// What is wrong with a database URL, said to the user with its fix.
    public enum AddressProblem: Error, Equatable {
        case notPostgresURL
        case password
        case plainTextToAnotherMachine
    }

    /// `postgresql://USER@HOST[:PORT]/DATABASE[?sslmode=disable|require]` (also `postgres://`;
    /// an IPv6 host in brackets). A password in the URL is refused: it would be printed and
    /// kept in a file others may read.
    public static func parseDatabase(_ text: String) -> Result<DatabaseAddress, AddressProblem> {
        guard text.count <= 1024 else { return .failure(.notPostgresURL) }
        var rest: Substring
        if text.hasPrefix("postgresql://") { rest = text.dropFirst(13) } else if text.hasPrefix("postgres://") { rest = text.dropFirst(11) } else {
            return .failure(.notPostgresURL)
        }
        var sslmode: String?
        if let question = rest.firstIndex(of: "?") {
            for pair in rest[rest.index(after: question)...].split(separator: "&") {
                let parts = pair.split(separator: "=", maxSplits: 1).map(String.init)
                guard parts.count == 2, parts[0] == "sslmode", ["disable", "require"].contains(parts[1]) else { return .failure(.notPostgresURL) }
                sslmode = parts[1]
            }
            rest = rest[..<question]
        }
        guard let at = rest.lastIndex(of: "@") else { return .failure(.notPostgresURL) }
        let userInfo = rest[..<at]
        if userInfo.contains(":") { return .failure(.password) }
        rest = rest[rest.index(after: at)...]
        guard let slash = rest.firstIndex(of: "/") else { return .failure(.notPostgresURL) }
        let name = String(rest[rest.index(after: slash)...])
        var hostPort = String(rest[..<slash])
        var port = 5432
        if hostPort.hasPrefix("[") {
            guard let close = hostPort.firstIndex(of: "]") else { return .failure(.notPostgresURL) }
            let after = hostPort[hostPort.index(after: close)...]
            if after.hasPrefix(":") {
                guard let p = Int(after.dropFirst()), (1...65535).contains(p) else { return .failure(.notPostgresURL) }
                port = p
            } else if !after.isEmpty { return .failure(.notPostgresURL) }
            hostPort = String(hostPort[hostPort.index(after: hostPort.startIndex)..<close])
        } else if let colon = hostPort.lastIndex(of: ":") {
            guard let p = Int(hostPort[hostPort.index(after: colon)...]), (1...65535).contains(p) else { return .failure(.notPostgresURL) }
            port = p
            hostPort = String(hostPort[..<colon])
        }
        let user = String(userInfo)
        func plain(_ s: String, _ limit: Int, extra: Set<Character>) -> Bool {
            !s.isEmpty && s.count <= limit && s.allSatisfy { ($0.isASCII && ($0.isLetter || $0.isNumber)) || extra.contains($0) }
        }
        guard plain(user, 63, extra: ["_", "-", "."]), plain(name, 63, extra: ["_", "-"]),
              plain(hostPort, 253, extra: [".", "-", ":"]) else { return .failure(.notPostgresURL) }
        let loopback = HTTPSettings.isLoopback(hostPort)
        if sslmode == "disable" && !loopback { return .failure(.plainTextToAnotherMachine) }
        return .success(DatabaseAddress(user: user, host: hostPort, port: port, name: name, requiresTLS: sslmode.map { $0 == "require" } ?? !loopback))
    }

    /// A node name as the cluster keys it: lower-case letters, digits, `.`, `_`, `-`; 1–63 of them.
    public static func isNodeName(_ text: String) -> Bool {
        (1...63).contains(text.count) && text.allSatisfy { ($0.isASCII && ($0.isLowercase || $0.isNumber)) || $0 == "." || $0 == "_" || $0 == "-" }
    }

    /// This machine's host name, lower-cased: the default node name.
    public static func hostName() -> String {
        var buffer = [CChar](repeating: 0, count: 256)
        guard gethostname(&buffer, buffer.count - 1) == 0 else { return "" }
        return String(decoding: buffer.prefix { $0 != 0 }.map { UInt8(bitPattern: $0) }, as: UTF8.self).lowercased()
    }
}

extension ClusterSettings: CustomDebugStringConvertible {
    /// Printed as part of a value printed whole, without the password.
    public var debugDescription: String {
        "ClusterSettings(database: \"\(database)\", node: \"\(node)\", leaseSeconds: \(leaseSeconds), password: \(password?.debugDescription ?? "nil"))"
    }
}

extension ConfigurationDecoder {
    /// `[cluster]`: every key checked, the password read now, so a missing or readable
    /// password file is an error at start, not when the database is first asked.
    mutating func decodeCluster(_ top: inout Reader, environment: [String: String]) -> ClusterSettings? {
        guard var cluster = table(&top, "cluster") else { return nil }
        defer { unknown(cluster, ClusterSettings.keys) }
        var address: ClusterSettings.DatabaseAddress?
        if let database = string(&cluster, "database") {
            switch ClusterSettings.parseDatabase(database.value) {
            case .success(let parsed): address = parsed
            case .failure(.password):
                report(database.line, "database holds a password: it would be printed and kept where others may read it",
                       fix: "remove it from the URL and write password_file = \"/etc/vigil/pgpass\" (mode 600), or set PGPASSWORD")
            case .failure(.plainTextToAnotherMachine):
                report(database.line, "database asks for sslmode=disable to another machine: the index and its password would cross the network unencrypted",
                       fix: "remove ?sslmode=disable (TLS is then required), or use a database on this machine")
            case .failure(.notPostgresURL):
                report(database.line, "database \"\(database.value)\" is not postgresql://USER@HOST[:PORT]/DATABASE",
                       fix: "write e.g. database = \"postgresql://vigil@db.example.net/vigil\" (optional ?sslmode=require or disable)")
            }
        } else {
            report(cluster.line, "[cluster] needs database, the PostgreSQL the nodes share", fix: "add database = \"postgresql://vigil@HOST/vigil\"")
        }
        var password: ClusterSettings.Password?
        let file = string(&cluster, "password_file")
        if let file {
            do {
                let text = try HTTPSettings.readPrivateFile(file.value, what: "password_file", secret: "the database's password")
                let value = text.split(separator: "\n", omittingEmptySubsequences: false).first.map(String.init) ?? ""
                if value.isEmpty || value.count > 1024 {
                    report(file.line, "password_file \(file.value) holds no password on its first line (or one over 1024 characters)", fix: "write the password alone on the first line")
                } else {
                    password = .init(value: value, source: file.value)
                }
            } catch {
                report(file.line, error.description, fix: "chmod 600 \(file.value) (or 640 with the group vigil runs as)")
            }
        } else if let value = environment["PGPASSWORD"], !value.isEmpty, value.count <= 1024 {
            password = .init(value: value, source: "PGPASSWORD")
        }
        var node = ClusterSettings.hostName()
        if let named = string(&cluster, "node") {
            if ClusterSettings.isNodeName(named.value) { node = named.value } else {
                report(named.line, "node \"\(named.value)\" is not a node name", fix: "use 1–63 of a-z 0-9 . _ - (e.g. node = \"node-a\")")
            }
        }
        if let named = environment[ClusterSettings.nodeVariable], !named.isEmpty {
            if ClusterSettings.isNodeName(named) { node = named } else {
                report(cluster.line, "\(ClusterSettings.nodeVariable)=\(named) is not a node name", fix: "use 1–63 of a-z 0-9 . _ - (e.g. VIGIL_NODE=node-a)")
            }
        }
        if !ClusterSettings.isNodeName(node) {
            report(cluster.line, "this machine's host name \"\(node)\" cannot name a node", fix: "add node = \"node-a\" (1–63 of a-z 0-9 . _ -), or set \(ClusterSettings.nodeVariable)")
        }
        let lease = integer(&cluster, "lease_seconds", in: 3...300)
        guard let address, ClusterSettings.isNodeName(node) else { return nil }
        var settings = ClusterSettings(database: address, node: node)
        settings.passwordFile = file?.value
        settings.password = password
        if let lease { settings.leaseSeconds = lease }
        settings.line = cluster.line
        return settings
    }
}
