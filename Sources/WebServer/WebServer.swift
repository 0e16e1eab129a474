import Access
import Archive
import Capture
import Cluster
import Foundation
import Hummingbird
import HummingbirdCore
import HummingbirdWebSocket
import Logging
import NIOCore
import Plumbing
import Prometheus
import Recorder
import ServiceLifecycle

/// The request context of every route. Its own type, so that live view can make it a
/// WebSocket context without touching the other routes.
public struct WebRequestContext: RequestContext, WebSocketRequestContext {
    public var coreContext: CoreRequestContextStorage
    /// The WebSocket handler a route chose (live view's fMP4 stream).
    public let webSocket = WebSocketHandlerReference<Self>()
    /// The request's connection (live view sizes its send buffer; a refused upgrade is answered on it).
    public let channel: any Channel
    /// Who sent the request (`AuthMiddleware`): everyone is an admin on a server that asks for nothing.
    public var identity = Identity.anyone
    /// The client's address: the peer's, or a trusted proxy's `X-Forwarded-For` (`ClientAddressMiddleware`).
    public var clientAddress: String
    /// True when a trusted proxy says the browser reached it over https (the cookie gets `Secure`).
    public var viaHTTPS = false
    public init(source: ApplicationRequestContextSource) {
        coreContext = .init(source: source)
        channel = source.channel
        clientAddress = source.channel.remoteAddress?.ipAddress ?? "unknown"
    }
}

/// The web server of `vigil run`/`demo`: a service in the recorder's tree, added by the `vigil`
/// executable through `RecorderService.Options.extraServices`. It only reads: GET never changes
/// anything, and files are named by index ids, never by paths.
///
/// It never takes the recorder down: a port in use (or any other failure to listen) is said
/// once, and recording goes on without the page.
public struct WebServer: Service {
    let settings: HTTPSettings
    let recorder: RecorderService.Opened
    /// Counters and gauges for `/metrics` (nil: the executable bootstrapped no registry).
    let metrics: RecorderMetrics?
    /// Live viewers connected now, against `max_live_clients` (`vigil_live_clients`).
    public let liveClients: Places
    /// Clips being built, against `max_clips`, and the bytes they reserve.
    let clips: ClipBudget
    /// Where archived recordings are read back from (`[archive]`); nil: no archive.
    let archive: ArchiveReader?
    /// The whole site (`[cluster]`), for the page and API; nil: this node alone.
    let site: (any SiteCatalog)?
    /// Wrong tokens at the login form, per address (tests set one with their own clock).
    var loginThrottle = LoginThrottle()
    /// The users, API tokens and sessions of the index, and token_file's token.
    let access: AccessBook
    /// Who watched, downloaded, marked or logged in (the index's `audit` table).
    let audit: AuditLog
    private let logger = Logger(label: "vigil.http")

    /// `metrics`: the registry the executable bootstrapped swift-metrics with, served at
    /// `/metrics`. The recorder's events are subscribed to at once (the first segment counts).
    public init(
        settings: HTTPSettings, recorder: RecorderService.Opened, metrics: PrometheusCollectorRegistry? = nil, archive: ArchiveReader? = nil,
        site: (any SiteCatalog)? = nil
    ) {
        self.settings = settings
        self.recorder = recorder
        self.archive = archive
        self.site = site
        self.metrics = metrics.map { RecorderMetrics(registry: $0, recorder: recorder, archiving: archive != nil) }
        liveClients = Places(limit: settings.maxLiveClients, gauge: "vigil_live_clients")
        clips = ClipBudget(limit: settings.maxClips)
        let now: @Sendable () -> Int64 = { SystemClocks.wallNanos() }
        access = AccessBook(
            index: recorder.index, tokenFile: settings.token,
            limits: .init(idleNanos: Int64(settings.sessionIdleHours) * 3_600_000_000_000, lifetimeNanos: Int64(settings.sessionDays) * 86_400_000_000_000),
            reads: ApiRoutes.io, writes: ApiRoutes.writeIO, now: now)
        audit = AuditLog(index: recorder.index, writes: ApiRoutes.writeIO, retentionNanos: Int64(settings.auditDays) * 86_400_000_000_000, now: now)
    }

    /// Asks the cluster's peers at `addresses` when they last reached the database (the lease
    /// keeper's fence), with the site's `[http]` token.
    public static func askWitnesses(at addresses: [String], token: String?) async -> [PeerWitness] {
        await ClusterRoutes.askWitnesses(at: addresses, token: token)
    }

    /// The services to add to the recorder's tree for this configuration: none when `listen` is "".
    public static func services(
        _ recorder: RecorderService.Opened, metrics: PrometheusCollectorRegistry?, archive: ArchiveReader? = nil, site: (any SiteCatalog)? = nil
    ) -> [any Service] {
        let settings = recorder.configuration.http
        return settings.isEnabled ? [WebServer(settings: settings, recorder: recorder, metrics: metrics, archive: archive, site: site)] : []
    }

    public func run() async {
        await ApiRoutes.io.run { [recorder] in ClipRoutes.removeLeftovers(root: recorder.root) }
        do {
            let page = await ApiRoutes.io.run { PageFiles.load() }
            try await application(page: page).run()
        } catch {
            // Logged (a journal line under systemd), not printed: it is not the recorder's failure.
            logger.error("the web server cannot listen on \(settings.listen): \(Self.explain(error)). Recording goes on without the web page; set [http] listen to a free address (or \"\" for none) and restart.")
            try? await gracefulShutdown()
        }
    }

    /// The bind failure in words a user can act on, decided by its errno (never by its text).
    static func explain(_ error: any Error) -> String {
        switch (error as? IOError)?.errnoCode {
        case EADDRINUSE?: return "the port is already in use by another program"
        case EADDRNOTAVAIL?: return "no network interface of this machine has that address"
        case EACCES?: return "ports below 1024 need root or CAP_NET_BIND_SERVICE"
        default: return "\(error)"
        }
    }

    /// The server with every route group. Each concern adds its routes in its own function:
    /// `LoginRoutes` (the session), `AuditRoutes` (the trail), `ApiRoutes` (cameras, recordings, stills, a camera's events),
    /// `EventRoutes` (event review), `FileRoutes` (files by id), `ClusterRoutes` (other nodes'
    /// files and pictures, `[cluster]`), `ClipRoutes`,
    /// `RecorderMetrics` (`/metrics`); live view (`LiveRoutes`) and the page (`PageRoutes`, `/` and `/static`)
    /// are added here the same way. In front of the routes: the request count, a refused
    /// WebSocket's answer, JSON errors, the Host check, the same-origin check, the client's
    /// address, who it is (token, session, role), the audit trail.
    func application(page: PageFiles = .load()) -> some ApplicationProtocol {
        let router = Router(context: WebRequestContext.self)
        if metrics != nil {
            router.add(middleware: RequestCountingMiddleware())
            // Per route (its pattern, so the labels stay few), method and status: a histogram of
            // durations (`http_server_request_duration`, until the answer's last byte), counts
            // and errors, and requests under way by method.
            router.add(middleware: MetricsMiddleware<WebRequestContext>())
        }
        router.add(middleware: UpgradeRefusalMiddleware())
        router.add(middleware: JSONErrorMiddleware())
        let hosts = AllowedHosts(settings: settings)
        router.add(middleware: HostCheckMiddleware(hosts: hosts))
        router.add(middleware: SameOriginMiddleware(hosts: hosts))
        router.add(middleware: ClientAddressMiddleware(trustedProxies: settings.trustedProxies))
        router.add(middleware: AuthMiddleware(access: access, throttle: loginThrottle, audit: audit))
        router.add(middleware: AuditMiddleware(audit: audit))
        LoginRoutes(access: access, throttle: loginThrottle, audit: audit, sessionDays: settings.sessionDays).add(to: router)
        let time = APITime(timeZone: recorder.configuration.timeZone)
        AuditRoutes(audit: audit, time: time).add(to: router)
        let api = ApiRoutes(recorder: recorder, time: time, site: site)
        api.add(to: router)
        EventRoutes(api: api).add(to: router)
        let files = FileRoutes(recorder: recorder, archive: archive)
        files.add(to: router)
        if let site { ClusterRoutes(site: site, files: files, events: EventRoutes(api: api), token: settings.token, clients: liveClients).add(to: router) } else { ClusterRoutes.addAbsent(to: router) }
        ClipRoutes(api: api, budget: clips, archive: archive, token: settings.token).add(to: router)
        metrics?.add(to: router)
        LiveRoutes(feeds: recorder.liveFeeds, clients: liveClients).add(to: router)
        PageRoutes(files: page).add(to: router)
        router.add(middleware: MethodNotAllowedMiddleware(routes: router.routes))
        let address = settings.address ?? (host: "127.0.0.1", port: 8080)
        let limits = ConnectionLimits(settings: settings, openFiles: OpenFileLimit.current)
        if limits.connections < settings.maxConnections {
            logger.notice("the open-file limit (\(limits.openFiles)) leaves the web server \(limits.connections) connections of max_connections = \(settings.maxConnections), keeping \(OpenFileLimit.reserve(limit: limits.openFiles)) for recording; raise LimitNOFILE (ulimit -n) for more")
        }
        return Application(
            router: router,
            server: limits.server(webSocketRouter: router),
            configuration: .init(
                address: .hostname(address.host, port: address.port), serverName: nil,
                availableConnectionsDelegate: MaximumAvailableConnections(limits.connections, logger: logger)),
            services: metrics.map { [$0] } ?? [],
            onServerRunning: { [settings] channel in
                let bound = channel.localAddress?.port ?? address.port
                let host = settings.listen.hasPrefix("[") ? "[\(address.host)]" : address.host
                Console.line("Web page: http://\(host):\(bound)" + (settings.token == nil ? "" : " (log in with the token of \(settings.tokenFile ?? "token_file"))"))
            },
            logger: logger)
    }
}
