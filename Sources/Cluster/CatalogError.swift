import Plumbing
import PostgresNIO

/// Why the PostgreSQL catalogue could not answer, in words a person can act on.
public enum CatalogError: Error, Sendable, Equatable, CustomStringConvertible {
    /// The server did not answer within the deadline (down, unreachable, stopped).
    case unavailable(String)
    /// The server answered with an error (a refused login, a failed statement).
    case refused(String)
    /// The database's schema was written by a newer Vigil.
    case newerSchema(found: Int32, known: Int32)
    /// A row held a value this code cannot use (an unknown kind, a negative size).
    case invalidRow(String)
    /// A synchronous catalogue method was called from Swift's cooperative pool, where waiting
    /// for the network could starve the very tasks that run the query.
    case calledFromSwiftConcurrency

    public var description: String {
        switch self {
        case .unavailable(let why): return "the cluster catalogue is not answering: \(why)"
        case .refused(let why): return "the cluster catalogue refused: \(why)"
        case .newerSchema(let found, let known):
            return "the cluster catalogue was written by a newer Vigil (schema version \(found); this one knows up to \(known)): upgrade this node"
        case .invalidRow(let why): return "the cluster catalogue holds a row this Vigil cannot use: \(why)"
        case .calledFromSwiftConcurrency:
            return "the cluster catalogue was called from Swift's cooperative pool: call it on a BlockingIO thread"
        }
    }

    /// PostgresNIO's errors print only "Database error" (to keep queries out of logs); this keeps
    /// the server's message and SQLSTATE, which name no value, and says when the connection failed.
    public static func from(_ error: any Error) -> CatalogError {
        if let error = error as? CatalogError { return error }
        if let error = error as? PostgresTransactionError {
            // What failed first: BEGIN, the work inside, or COMMIT (a failed ROLLBACK follows one of those).
            return from(error.beginError ?? error.closureError ?? error.commitError ?? error.rollbackError ?? CatalogError.unavailable("a transaction failed"))
        }
        guard let error = error as? PSQLError else { return .unavailable("\(error)") }
        if let info = error.serverInfo {
            return .refused("\(info[.message] ?? "an error") (SQLSTATE \(info[.sqlState] ?? "?"))")
        }
        return .unavailable("\(error.code)\(error.underlying.map { ": \($0)" } ?? "")")
    }
}
