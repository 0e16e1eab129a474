import Hummingbird

/// Only Vigil's own page (or no page at all: curl, scripts, other nodes) may change anything, open
/// live video, or make the server build or read what costs work (clips, exports, files,
/// snapshots, listings). Another program's page, even one served from another port of
/// loopback, is refused with 403 JSON, whatever cookie its browser would send:
/// - `Sec-Fetch-Site` (set by the browser, never by a page's script) other than `same-origin`
///   or `none` (typed or bookmarked): `same-site` is another port of the same host;
/// - an `Origin`, or for requests without one (media elements) a `Referer`, that is not one of
///   this server's pages (`AllowedHosts.isOwn`: scheme, host and port).
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
            if AuthMiddleware<Context>.bearer(request.headers[.authorization]) != nil { return nil }
        }
        let what = changes ? "change anything" : "ask for this"
        let site = request.headers[.secFetchSite]?.lowercased()
        if let site, site != "same-origin", site != "none" {
            return APIError(.forbidden, "refused: this request comes from another page (Sec-Fetch-Site: \(site.prefix(32))); only Vigil's own page may \(what)")
        }
        let origins = request.headers[values: .origin]
        // A form the page posts is sent with `Origin: null` under some referrer policies; the
        // browser's own `Sec-Fetch-Site` then says where it comes from.
        if site == "same-origin" && origins == ["null"] { return nil }
        guard hosts.allowsOrigin(of: request) else {
            return APIError(.forbidden, "refused: Origin \(origins.joined(separator: ", ").prefix(256)) is not a page of this server (its scheme, host and port); only Vigil's own page may \(what)")
        }
        // A media element (`<img>`, `<video>`) sends no `Origin`: its `Referer` names the page.
        if origins.isEmpty, let referer = request.headers[.referer], !hosts.isOwn(origin: referer, of: request) {
            return APIError(.forbidden, "refused: this request comes from \(referer.prefix(256)), not a page of this server; only Vigil's own page may \(what)")
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
