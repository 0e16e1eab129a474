import Hummingbird

/// Only Vigil's own page (or no page at all: curl, scripts, other nodes) may change anything, open
/// live video, or make the server build or read what costs work (clips, exports, files,
/// snapshots, listings). Another program's page, even one served from another port of
/// loopback, is refused with 403 JSON, whatever cookie its browser would send:
/// - `Sec-Fetch-Site` (set by the browser, never by a page's script) other than `same-origin`
///   or `none` (typed or bookmarked): `same-site` is another port of the same host;
/// - an `Origin`, or for requests without one (media elements) a `Referer`, that is not one of
///   this server's pages (`AllowedHosts.isOwn`: scheme, host and port);
/// - the session cookie without any of those headers (see `refusal`).
///
/// `Sec-Fetch-Site: same-origin` alone is enough: the browser computes it.
///
/// A `GET` with `Authorization: Bearer` is served (no other site's page can make a browser send
/// it), and so are the page itself, its static files and `/healthz`, which any link may open.
/// A request that changes something (any method but `GET` and `HEAD`) is checked always.
struct SameOriginMiddleware<Context: RequestContext>: RouterMiddleware {
    let hosts: AllowedHosts

    func handle(_ request: Request, context: Context, next: (Request, Context) async throws -> Response) async throws -> Response {
        if let refusal = refusal(of: request) { throw refusal }
        return try await next(request, context)
    }

    /// Why `request` is refused; nil when it is served.
    func refusal(of request: Request) -> APIError? {
        let changes = request.method != .get && request.method != .head
        if !changes {
            if Self.isOpenToAnyPage(request.uri.path) { return nil }
            if AuthMiddleware.bearer(request.headers[.authorization]) != nil { return nil }
        }
        let what = changes ? "change anything" : "ask for this"
        let site = request.headers[.secFetchSite]?.lowercased()
        if let site, site != "same-origin", site != "none" {
            return APIError(.forbidden, "refused: this request comes from another page (Sec-Fetch-Site: \(site.prefix(32))); only Vigil's own page may \(what)")
        }
        // The browser's own word that the page is this server's: enough, whatever `Host` a
        // reverse proxy passed on (DNS rebinding is stopped by the Host check, or the token).
        // It covers the page's forms sent with `Origin: null` under some referrer policies.
        if site == "same-origin" { return nil }
        let origins = request.headers[values: .origin]
        guard hosts.allowsOrigin(of: request) else {
            return APIError(.forbidden, "refused: Origin \(origins.joined(separator: ", ").prefix(256)) is not a page of this server (its scheme, host and port); only Vigil's own page may \(what)")
        }
        // A media element (`<img>`, `<video>`) sends no `Origin`: its `Referer` names the page.
        let referer = request.headers[.referer]
        if origins.isEmpty, let referer, !hosts.isOwn(origin: referer, of: request) {
            return APIError(.forbidden, "refused: this request comes from \(referer.prefix(256)), not a page of this server; only Vigil's own page may \(what)")
        }
        // The session cookie with no sign at all of where the request comes from: browsers send
        // `Sec-Fetch-Site` only to https and loopback, and a page can drop its `Referer`
        // (`referrerpolicy="no-referrer"`), so another program's page on this host (the same
        // site, which gets the cookie) could be using it. Vigil's page always sends a `Referer`.
        if site == nil, origins.isEmpty, referer == nil, request.cookies[AuthMiddleware.cookieName] != nil {
            return APIError(.forbidden, "refused: this request carries the session cookie but neither Sec-Fetch-Site, Origin nor Referer, so it may come from another page; open it from Vigil's page, or send Authorization: Bearer TOKEN")
        }
        return nil
    }

    /// The page, its static files and the health check: any link may open them.
    static func isOpenToAnyPage(_ path: String) -> Bool {
        path == "/" || path == "/healthz" || path == "/favicon.ico" || path.hasPrefix("/static/")
    }
}

extension HTTPFields.Element.Name {
    /// Where the browser says a request comes from (Fetch Metadata); no page's script can set it.
    static let secFetchSite = HTTPFields.Element.Name("Sec-Fetch-Site")!
}
