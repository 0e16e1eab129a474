import Foundation
import Hummingbird
import Recorder

/// The host names this server answers to, against DNS rebinding: a page on another site can
/// make its own name resolve to 127.0.0.1 and then read this server as if it were its own
/// origin, unless the server refuses requests whose `Host` is that other name. Without a token
/// (loopback only) a request is served when its `Host` names loopback (127.0.0.0/8, ::1,
/// localhost) or one of `[http] allowed_hosts`. With a token, the token is the defence (the
/// other site's page cannot send it) and any `Host` is served.
///
/// Which pages are this server's own (`SameOriginMiddleware`) is decided here too: an origin is
/// a scheme, a host and a port, and only the server's own count (see `isOwn`).
struct AllowedHosts: Sendable {
    let names: Set<String>
    let hasToken: Bool
    /// The port of `[http] listen` (nil: none, or 0 for any free port).
    let listenPort: Int?

    init(settings: HTTPSettings) {
        names = Set(settings.allowedHosts)
        hasToken = settings.token != nil
        listenPort = settings.address.flatMap { $0.port == 0 ? nil : $0.port }
    }

    /// The host of a `Host` value or of an origin's authority (`[::1]:8080` → `::1`), lower-case,
    /// without a trailing dot; nil when it is not a host.
    static func host(ofAuthority authority: String) -> String? {
        WebAuthority.split(authority)?.host
    }

    func isAllowed(host: String) -> Bool {
        HTTPSettings.isLoopback(host) || names.contains(host)
    }

    /// True when the request may be served for its `Host` (none: not a browser, which always sends one).
    func allowsHost(of request: Request) -> Bool {
        guard !hasToken, let authority = request.head.authority else { return true }
        return Self.host(ofAuthority: authority).map(isAllowed) ?? false
    }

    /// True when every `Origin` of the request is one of this server's pages (none: not a browser).
    func allowsOrigin(of request: Request) -> Bool {
        request.headers[values: .origin].allSatisfy { isOwn(origin: $0, of: request) }
    }

    /// True when `origin` (`http://127.0.0.1:8080`: a scheme, a host, a port) is this server's:
    /// - the very authority the request was sent to (its `Host`: the browser loaded the page
    ///   from there; without a token `HostCheckMiddleware` has already refused foreign names),
    ///   the port compared too, so another program's page on another port of loopback is not; or
    /// - a name of `[http] allowed_hosts` (a reverse proxy's public name) on `listen`'s port or
    ///   on its scheme's own port (80, 443).
    ///
    /// A `ws:` or `wss:` origin is no page's (a browser sends its page's `http(s)` origin, and
    /// `null` for pages without one): it is a WebSocket client outside a browser, which could
    /// send any header, and is not judged by it.
    func isOwn(origin: String, of request: Request) -> Bool {
        let scheme = origin.prefix { $0 != ":" }.lowercased()
        if scheme == "ws" || scheme == "wss" { return true }
        guard let origin = WebOrigin(origin) else { return false }
        if let authority = request.head.authority, let server = WebAuthority.split(authority),
           server.host == origin.host, (server.port ?? origin.defaultPort) == origin.port {
            return true
        }
        return names.contains(origin.host) && (origin.port == origin.defaultPort || origin.port == listenPort)
    }
}

/// Refuses a request whose `Host` is not one this server answers to (see `AllowedHosts`), with
/// 421 JSON: the name is not this server's.
struct HostCheckMiddleware<Context: RequestContext>: RouterMiddleware {
    let hosts: AllowedHosts

    func handle(_ request: Request, context: Context, next: (Request, Context) async throws -> Response) async throws -> Response {
        guard hosts.allowsHost(of: request) else {
            throw APIError(.misdirectedRequest, "Host \(request.head.authority ?? "") is not a name of this server; a page that reaches Vigil under another name is refused (DNS rebinding). Add the name to [http] allowed_hosts to use it")
        }
        return try await next(request, context)
    }
}
