/// What a user may do on the web server. A viewer watches live and plays recordings; an admin
/// also marks events, downloads clips, reads the audit trail and speaks for the site (the
/// cluster's peer routes, `/metrics`).
public enum Role: String, Sendable, CaseIterable {
    case admin
    case viewer
}

/// Who a request comes from, and how they proved it.
public struct Identity: Sendable, Equatable {
    public let user: String
    public let role: Role
    /// For the audit trail: "session 1a2b3c4d" (the short id `vigil session list` shows),
    /// "token NAME", "token_file", or "none" (a server that asks for nothing).
    public let credential: String
    /// The session's hash, when it came with a session (logging out removes it).
    public let sessionHash: String?

    public init(user: String, role: Role, credential: String, sessionHash: String? = nil) {
        self.user = user
        self.role = role
        self.credential = credential
        self.sessionHash = sessionHash
    }

    /// A server on loopback without token_file or users: everyone is an admin, known by address only.
    public static let anyone = Identity(user: "-", role: .admin, credential: "none")
    /// The token of `[http] token_file`: the site's admin token (cluster peers use it too).
    public static let tokenFile = Identity(user: "token_file", role: .admin, credential: "token_file")

    /// The short id of a session, from its hash: what `vigil session list` shows and revokes.
    public static func sessionID(hash: String) -> String { String(hash.prefix(8)) }
}
