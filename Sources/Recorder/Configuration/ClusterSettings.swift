import Foundation
import Glibc

/// Several recorders sharing one catalogue in PostgreSQL (`[cluster]`): the same file on every
/// node, each node named by its host name unless `node` (or `VIGIL_NODE`) says otherwise. Read
/// at start, like `[archive]`.
public struct ClusterSettings: Sendable, Equatable {
    /// The database, as `postgresql://USER@HOST[:PORT]/DATABASE` names it (never with a password);
    /// TLS is required unless it is on this machine.
    public var database: ClusterDatabaseURL
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

    public init(database: ClusterDatabaseURL, node: String) {
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
        var address: ClusterDatabaseURL?
        if let database = string(&cluster, "database") {
            do {
                address = try ClusterDatabaseURL(database.value)
            } catch {
                report(database.line, error.description, fix: "write e.g. database = \"postgresql://vigil@db.example.net/vigil\", with the password in password_file")
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
            if NodeName.isValid(named.value) { node = named.value } else {
                report(named.line, "node \"\(named.value)\" is not a node name", fix: "use 1–63 of a-z 0-9 . _ - (e.g. node = \"node-a\")")
            }
        }
        if let named = environment[ClusterSettings.nodeVariable], !named.isEmpty {
            if NodeName.isValid(named) { node = named } else {
                report(cluster.line, "\(ClusterSettings.nodeVariable)=\(named) is not a node name", fix: "use 1–63 of a-z 0-9 . _ - (e.g. VIGIL_NODE=node-a)")
            }
        }
        if !NodeName.isValid(node) {
            report(cluster.line, "this machine's host name \"\(node)\" cannot name a node", fix: "add node = \"node-a\" (1–63 of a-z 0-9 . _ -), or set \(ClusterSettings.nodeVariable)")
        }
        let lease = integer(&cluster, "lease_seconds", in: 3...300)
        guard let address, NodeName.isValid(node) else { return nil }
        var settings = ClusterSettings(database: address, node: node)
        settings.passwordFile = file?.value
        settings.password = password
        if let lease { settings.leaseSeconds = lease }
        settings.line = cluster.line
        return settings
    }
}
