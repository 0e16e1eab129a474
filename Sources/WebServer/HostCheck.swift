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
/// A WebSocket's `Origin` (the page that opens it) must name an allowed host too; with a token,
/// also the host the request was sent to.
struct AllowedHosts: Sendable {
    let names: Set<String>
    let hasToken: Bool

    init(settings: HTTPSettings) {
        names = Set(settings.allowedHosts)
        hasToken = settings.token != nil
    }

    /// The host of a `Host` value or of an origin's authority (`[::1]:8080` → `::1`), lower-case,
    /// without a trailing dot; nil when it is not a host.
    static func host(ofAuthority authority: String) -> String? {
        var text = Substring(authority.lowercased())
        if text.hasPrefix("[") {
            guard let end = text.firstIndex(of: "]") else { return nil }
            let rest = text[text.index(after: end)...]
            guard rest.isEmpty || (rest.hasPrefix(":") && rest.dropFirst().allSatisfy(\.isNumber)) else { return nil }
            text = text[text.index(after: text.startIndex)..<end]
        } else if let colon = text.firstIndex(of: ":") {
            guard text[text.index(after: colon)...].allSatisfy(\.isNumber) else { return nil }
            text = text[..<colon]
        }
        if text.hasSuffix(".") { text = text.dropLast() }
        return HTTPSettings.hostName(String(text))
    }

    func isAllowed(host: String) -> Bool {
        HTTPSettings.isLoopback(host) || names.contains(host)
    }

    /// True when the request may be served for its `Host` (none: not a browser, which always sends one).
    func allowsHost(of request: Request) -> Bool {
        guard !hasToken, let authority = request.head.authority else { return true }
        return Self.host(ofAuthority: authority).map(isAllowed) ?? false
    }

    /// True when every `Origin` of the request names an allowed host (none: not a browser).
    func allowsOrigin(of request: Request) -> Bool {
        let origins = request.headers[values: .origin]
        let server = request.head.authority.flatMap(Self.host(ofAuthority:))
        return origins.allSatisfy { origin in
            guard let url = URL(string: origin), let scheme = url.scheme, ["http", "https", "ws", "wss"].contains(scheme.lowercased()),
                  let host = Self.host(ofAuthority: url.host.map { $0.contains(":") && !$0.hasPrefix("[") ? "[\($0)]" : $0 } ?? "") else { return false }
            return isAllowed(host: host) || (hasToken && host == server)
        }
    }
}

extension AllowedHosts {
    /// A request that changes something (`POST`) comes from this server's own page or from no
    /// page at all (curl sends no `Origin`): a browser that says it comes from another site
    /// (`Sec-Fetch-Site: cross-site`, or an `Origin` that is not a page of this server, as for
    /// the WebSocket) is refused with 403, whatever token or cookie it carries.
    func requireSameOrigin(_ request: Request) throws(APIError) {
        if request.headers[Self.fetchSite]?.lowercased() == "cross-site" {
            throw APIError(.forbidden, "refused: this request comes from another site's page (Sec-Fetch-Site: cross-site); only Vigil's own page may change anything")
        }
        // A form the page posts is sent with `Origin: null` under some referrer policies; the
        // browser's own `Sec-Fetch-Site` (no script can set it) then says where it comes from.
        let fromOwnPage = request.headers[Self.fetchSite]?.lowercased() == "same-origin" && request.headers[values: .origin] == ["null"]
        guard fromOwnPage || allowsOrigin(of: request) else {
            throw APIError(.forbidden, "refused: Origin \(request.headers[.origin]?.prefix(256) ?? "") is not a page of this server; only Vigil's own page may change anything")
        }
    }

    static let fetchSite = HTTPFields.Element.Name("Sec-Fetch-Site")!
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
