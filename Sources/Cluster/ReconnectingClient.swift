import Logging
import PostgresNIO
import Synchronization

/// A `PostgresClient` that is replaced by a fresh one when a call went unanswered.
///
/// postgres-nio's pool waits longer after each failed connection attempt (0.1 s × 1.25ⁿ, up to a
/// minute), so after a two-minute outage a pool can go on waiting for many seconds once the
/// server is back: a node would then miss its lease renewal while its peers already reach the
/// database, and fence its cameras for nothing. A fresh client tries at once.
final class ReconnectingClient: Sendable {
    private let configuration: PostgresClient.Configuration
    private let logger: Logger
    private let current: Mutex<(client: PostgresClient, running: Task<Void, Never>)>

    /// `logger` at error level at least: postgres-nio's warnings are not the user's business
    /// (one says a call came before its `run()` began, which the pool waits for); what goes wrong
    /// reaches Vigil as the errors its calls throw, and Vigil says those itself.
    init(configuration: PostgresClient.Configuration, backgroundLogger logger: Logger) {
        self.configuration = configuration
        var quiet = logger
        quiet.logLevel = max(logger.logLevel, .error)
        self.logger = quiet
        current = Mutex(Self.started(configuration, quiet))
    }

    deinit { current.withLock { $0.running.cancel() } }

    /// The client to use for the next call.
    var client: PostgresClient { current.withLock { $0.client } }

    /// Drops the current client (its connections close) and starts a new one, unless `unanswered`
    /// was already replaced by another caller.
    func replace(_ unanswered: PostgresClient) {
        current.withLock { current in
            guard current.client === unanswered else { return }
            current.running.cancel()
            current = Self.started(configuration, logger)
        }
    }

    /// Stops the client's connections for good.
    func close() { current.withLock { $0.running.cancel() } }

    private static func started(_ configuration: PostgresClient.Configuration, _ logger: Logger) -> (client: PostgresClient, running: Task<Void, Never>) {
        let client = PostgresClient(configuration: configuration, backgroundLogger: logger)
        // Detached: a task made here would inherit the service group's graceful shutdown, which
        // postgres-nio's `run()` ends at: the pool would be shut down at SIGTERM before the node
        // gave its leases up (found by the outage test: "poolShutdown"). `close()` ends it.
        return (client, Task.detached { await client.run() })
    }
}
