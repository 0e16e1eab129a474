import Foundation
// The fuzz target `peer-witness` compiles this file with `NodeName.swift` in one module.
#if canImport(Recorder)
import Recorder
#endif

/// What a peer of a cluster says of its own contact with the shared database, when it has one
/// now (`GET /api/v1/cluster/witness`). A node whose requests go unanswered asks its peers, to
/// know whether it alone is cut off (then it fences its cameras).
public struct PeerWitness: Sendable, Equatable {
    public let node: String
    /// Seconds since the peer sent the last request the database answered.
    public let reachedSecondsAgo: Double
    /// Seconds it has talked to the database without a break (a node takes a lease that ran out
    /// only after a lease and a third of that).
    public let connectedForSeconds: Double

    public init(node: String, reachedSecondsAgo: Double, connectedForSeconds: Double) {
        self.node = node
        self.reachedSecondsAgo = reachedSecondsAgo
        self.connectedForSeconds = connectedForSeconds
    }

    /// The answer as the route writes it; a field is absent when the node has no such contact.
    public struct Answer: Codable, Sendable {
        public let node: String
        public let databaseReachedSecondsAgo: Double?
        public let databaseConnectedForSeconds: Double?

        enum CodingKeys: String, CodingKey {
            case node
            case databaseReachedSecondsAgo = "database_reached_seconds_ago"
            case databaseConnectedForSeconds = "database_connected_for_seconds"
        }

        public init(node: String, databaseReachedSecondsAgo: Double?, databaseConnectedForSeconds: Double?) {
            self.node = node
            self.databaseReachedSecondsAgo = databaseReachedSecondsAgo
            self.databaseConnectedForSeconds = databaseConnectedForSeconds
        }
    }

    /// The most bytes of an answer read (a few dozen are expected).
    public static let maximumAnswerBytes = 4096

    /// A peer's answer, read from its body: nil when it is out of shape, too long, names no node,
    /// carries a time that is no number or out of range, or says the peer has no contact now.
    /// The times are turned into durations by the caller, so they are bounded here.
    public init?(answer body: Data) {
        guard body.count <= Self.maximumAnswerBytes, let answer = try? JSONDecoder().decode(Answer.self, from: body),
              NodeName.isValid(answer.node),
              let ago = answer.databaseReachedSecondsAgo, ago.isFinite, (0..<1e6).contains(ago),
              let connected = answer.databaseConnectedForSeconds, connected.isFinite, (0..<1e9).contains(connected) else { return nil }
        self.init(node: answer.node, reachedSecondsAgo: ago, connectedForSeconds: connected)
    }
}
