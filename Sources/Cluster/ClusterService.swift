import Foundation
import Logging
import Plumbing
import PostgresNIO
import Recorder
import ServiceLifecycle

/// A node's part in the cluster while `vigil run` runs with `[cluster]`: it brings the shared
/// database's schema up to date, registers the node under a new incarnation and renews its
/// heartbeat every third of the lease with the cameras it records. The database being away
/// never touches recording: the node says so once, keeps recording, and registers again when
/// the database answers.
public final class ClusterService: Service, CustomStringConvertible {
    private let settings: ClusterSettings
    private let url: String
    private let cameras: @Sendable () async -> [String]
    /// The network cameras nodes share by lease (nil: this node takes none).
    private let leases: CameraLeases?
    /// When this node last reached the database, for peers that ask (`SiteView` answers them).
    private let contact: DatabaseContact
    private let witnesses: @Sendable ([String]) async -> [PeerWitness]
    private let incarnation = UUID()
    private let logger = Logger(label: "vigil.cluster")

    /// `url`: where this node's page answers; `cameras`: what it records now; `leases`: the
    /// shared network cameras it may take; `contact`: noted at each answered heartbeat;
    /// `witnesses`: asks the peers at these addresses when they last reached the database.
    public init(
        settings: ClusterSettings, url: String, leases: CameraLeases? = nil, contact: DatabaseContact = DatabaseContact(),
        witnesses: @escaping @Sendable ([String]) async -> [PeerWitness] = { _ in [] }, cameras: @escaping @Sendable () async -> [String]
    ) {
        self.settings = settings
        self.url = url
        self.leases = leases
        self.contact = contact
        self.witnesses = witnesses
        self.cameras = cameras
    }

    public var description: String { "ClusterService(node: \(settings.node), database: \(settings.database))" }

    public func run() async throws {
        let connections = ReconnectingClient(configuration: settings.clientConfiguration(), backgroundLogger: logger)
        defer { connections.close() }
        let keeper = leases.map {
            LeaseKeeper(table: LeaseTable(connections: connections, node: settings.node, incarnation: incarnation.uuidString,
                                          leaseSeconds: Double(settings.leaseSeconds)), cameras: $0, witnesses: witnesses)
        }
        let news = Wakeup()
        await withDiscardingTaskGroup { group in
            if let keeper {
                group.addTask {
                    while !Task.isCancelled {
                        await keeper.checkFence()
                        try? await Task.sleep(for: .milliseconds(250))
                    }
                }
                group.addTask { await Self.listen(connections, wake: news) }
            }
            await beat(connections, keeper: keeper, news: news)
            group.cancelAll()
        }
    }

    /// Wakes the lease rounds whenever a node hands a camera over (NOTIFY on `LeaseTable.channel`),
    /// so a taker opens it at once rather than a third of a lease later. Listens again a second
    /// after the database went away.
    private static func listen(_ connections: ReconnectingClient, wake: Wakeup) async {
        while !Task.isCancelled {
            try? await connections.client.withConnection { connection in
                try await connection.listen(on: LeaseTable.channel) { notifications in
                    for try await _ in notifications { wake.signal() }
                }
            }
            try? await Task.sleep(for: .seconds(1))
        }
    }

    /// Registers, then renews the heartbeat and runs the lease rounds until the service is
    /// stopped (or another process took this node's name: two recorders must not share one).
    /// While the database is away it tries every second, and keeps every camera it has.
    private func beat(_ connections: ReconnectingClient, keeper: LeaseKeeper?, news: Wakeup) async {
        let interval = Duration.milliseconds(settings.leaseSeconds * 1000 / 3)
        var registered = false
        var joining = false
        var away: String?
        var connectedSince: ContinuousClock.Instant?
        while !Task.isCancelled && !Task.isShuttingDownGracefully {
            var wait = interval
            let client = connections.client
            let registry = NodeRegistry(client: client)
            do {
                let held = await cameras()
                let sent = ContinuousClock.now
                await keeper?.attempt(at: sent)
                if registered {
                    let renewed = try await withDeadline(interval, "the heartbeat") { [settings, incarnation] in
                        try await registry.heartbeat(node: settings.node, incarnation: incarnation, cameras: held)
                    }
                    guard renewed else {
                        logger.error("""
                            another vigil registered as node \(settings.node) in \(settings.database): \
                            each node needs its own name ([cluster] node or VIGIL_NODE); this one leaves the cluster and records on
                            """)
                        if let keeper { try? await keeper.giveAll() }
                        // Returning would end the recorder's service group: wait for its end instead.
                        try? await gracefulShutdown()
                        return
                    }
                } else {
                    // A schema found behind gets the migration's own deadline, not a round's.
                    let version = try await PostgresCatalog.upgrade(client, deadline: interval * 3)
                    try await withDeadline(interval * 3, "joining the cluster") { [settings, incarnation, url] in
                        try await registry.register(node: settings.node, incarnation: incarnation, url: url, cameras: held)
                    }
                    registered = true
                    joining = true
                    logger.notice("joined the cluster in \(settings.database) as node \(settings.node) (schema version \(version) found)")
                }
                if let was = away {
                    logger.notice("the cluster database answers again (it was away: \(was))")
                    away = nil
                }
                let since = connectedSince ?? .now
                connectedSince = since
                contact.note(sentAt: sent, connectedSince: since)
                // The round of the join takes back only this node's own cameras from before a
                // restart; the next, a third of a lease later, its share: nodes started together
                // see each other by then.
                if let keeper {
                    let next = try await leaseRound(keeper, registry: registry, connectedSince: since, held: held, interval: interval, joining: joining)
                    if !joining { wait = next }
                }
                joining = false
                await keeper?.answered()
            } catch {
                connectedSince = nil
                contact.broken()
                // The next attempt connects at once rather than behind the pool's growing wait.
                connections.replace(client)
                wait = .seconds(1)
                let why = "\(CatalogError.from(error))"
                if away == nil {
                    logger.warning("the cluster database \(settings.database) is not answering (\(why)): this node keeps recording and tries again every second")
                }
                away = why
            }
            // A stop (SIGTERM) ends the wait at once: the leases are handed over now, not a round
            // later; a hand-over by another node (NOTIFY) too.
            await withGracefulShutdownHandler {
                await news.wait(untilMonotonic: SystemClocks.monotonicNanos() + wait.inNanoseconds)
            } onGracefulShutdown: {
                news.signal()
            }
        }
        if registered { await leave(NodeRegistry(client: connections.client), keeper: keeper) }
    }

    /// Stopped: marked stopped, the cameras handed over, then marked as recording nothing. A
    /// database that does not answer the mark gets no hand-over (it would wait for nothing within
    /// systemd's stop timeout): the cameras stop, and their leases are freed if it can.
    private func leave(_ registry: NodeRegistry, keeper: LeaseKeeper?) async {
        let reached = await sayStopped(registry, recording: await cameras())
        if let keeper { await giveLeasesUp(keeper, handingOver: reached) }
        if reached { await sayStopped(registry, recording: []) }
    }

    /// Stopped: the node table lists this node as stopped (not gone), with what it still records,
    /// and it no longer counts as live (the others' share grows, so they take its cameras).
    /// False when the database did not answer.
    @discardableResult
    private func sayStopped(_ registry: NodeRegistry, recording: [String]) async -> Bool {
        do {
            try await withDeadline(.seconds(2), "saying the node stopped") { [settings, incarnation] in
                try await registry.stopped(node: settings.node, incarnation: incarnation, cameras: recording)
            }
            return true
        } catch {
            logger.notice("could not mark node \(settings.node) stopped in \(settings.database) (\(CatalogError.from(error))): it is listed as gone")
            return false
        }
    }

    /// One lease round within a third of the lease; returns the wait before the next. When what
    /// this node records changed, the node table says so at once, not a round later.
    private func leaseRound(
        _ keeper: LeaseKeeper, registry: NodeRegistry, connectedSince: ContinuousClock.Instant, held: [String], interval: Duration, joining: Bool
    ) async throws -> Duration {
        let wait = try await withDeadline(interval, "the lease round") { [settings] in
            // The peers a fence asks, should this node be cut off from the database later.
            let peers = try await registry.nodes()
                .filter { $0.name != settings.node && !$0.url.isEmpty && $0.isAlive(leaseSeconds: Double(settings.leaseSeconds)) }
                .map(\.url)
            return try await keeper.round(connectedFor: .now - connectedSince, peers: peers, joining: joining)
        }
        let now = await cameras()
        if Set(now) != Set(held) {
            _ = try await withDeadline(interval, "the heartbeat") { [settings, incarnation] in
                try await registry.heartbeat(node: settings.node, incarnation: incarnation, cameras: now)
            }
        }
        return wait
    }

    /// Stopped (SIGTERM): the cameras are handed over (each stops here once another node writes
    /// it, or is given up when nobody takes it); what was given, or why nothing could be, is said.
    private func giveLeasesUp(_ keeper: LeaseKeeper, handingOver: Bool) async {
        let began = ContinuousClock.now
        // The hand-over talks to the database: cut off meanwhile, the fence stops the cameras in time.
        await keeper.attempt(at: began)
        do {
            let given = try await withDeadline(LeaseKeeper.offerLimit + LeaseKeeper.handOverLimit + .seconds(3), "handing the cameras over") {
                try await (handingOver ? keeper.handAllOver() : keeper.giveAll())
            }
            await keeper.answered()
            logger.notice("gave up the leases of \(given.isEmpty ? "no camera" : given.joined(separator: ", ")) in \(String(format: "%.2f", (ContinuousClock.now - began).inSeconds)) s")
        } catch {
            logger.warning("""
                could not give up this node's leases (\(CatalogError.from(error))): other nodes take its cameras \
                when the leases run out, within \(settings.leaseSeconds) s
                """)
        }
    }
}

extension ClusterDatabaseURL {
    /// postgres-nio's settings for this URL: TLS off on loopback, required elsewhere (a catalogue
    /// across the network must not be read or changed on the way).
    public func clientConfiguration(password: String?) -> PostgresClient.Configuration {
        PostgresClient.Configuration(
            host: host, port: port, username: user, password: password, database: database,
            tls: isLoopback ? .disable : .require(.makeClientConfiguration()))
    }
}

extension ClusterSettings {
    /// The database's client settings for a node's heartbeats and commands: connections that
    /// give up within the lease's third, so a database that went away is found in time to say it.
    public func clientConfiguration() -> PostgresClient.Configuration {
        var configuration = database.clientConfiguration(password: password?.value)
        configuration.options.connectTimeout = .milliseconds(max(1000, leaseSeconds * 1000 / 3))
        configuration.options.keepAliveBehavior = .init(frequency: .seconds(5))
        // Three: one LISTENs for hand-overs all the time; heartbeats and rounds keep two.
        configuration.options.maximumConnections = 3
        configuration.options.additionalStartupParameters = [("application_name", "vigil \(node)")]
        return configuration
    }
}

extension ClusterSettings {
    /// One connection, for a command: a refused login is an error at once, where a pool would
    /// keep trying to connect until the deadline.
    public func connect(timeout: Duration) async throws -> PostgresConnection {
        var configuration = PostgresConnection.Configuration(
            host: database.host, port: database.port, username: database.user, password: password?.value, database: database.database,
            tls: database.isLoopback ? .disable : .require(try .init(configuration: .makeClientConfiguration())))
        configuration.options.connectTimeout = .seconds(max(1, timeout.components.seconds))
        return try await PostgresConnection.connect(configuration: configuration, id: 1, logger: Logger(label: "vigil.cluster"))
    }
}
