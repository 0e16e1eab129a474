import Access
import Foundation
import Hummingbird

/// Who a request comes from (`context.identity`), and whether they may do what it asks.
///
/// When the server asks for nothing (no token_file and no users in the index: loopback only,
/// the configuration refuses anything else), everyone is `Identity.anyone`. Otherwise every
/// request but `/healthz`, the login form's posts and the app's manifest and icons needs
/// `Authorization: Bearer TOKEN` (token_file's, or one of `vigil token add`) or the session
/// cookie `POST /login` sets; others get 401 JSON, and a browser asking for the page gets the
/// login form. A viewer asking for what only an admin may do (`needsAdmin`) gets 403.
///
/// A wrong bearer token counts against its address like a wrong password at the form
/// (`LoginThrottle`): the API is no way around the form's waits. A session cookie does not: its
/// id is 256 random bits, nothing to guess, and a page whose session expired sends a dozen
/// requests at once, which would have made its user wait minutes to log in again. A wrong
/// cookie is cleared in the answer.
struct AuthMiddleware: RouterMiddleware {
    typealias Context = WebRequestContext
    let access: AccessBook
    let throttle: LoginThrottle
    /// A viewer refused what only an admin may do is written to the trail here (the audit
    /// middleware after this one never sees the request).
    let audit: AuditLog

    static var cookieName: String { "vigil_session" }

    func handle(_ request: Request, context: Context, next: (Request, Context) async throws -> Response) async throws -> Response {
        let path = request.uri.path
        if path == "/healthz" || Self.isPublic(path) || (request.method == .post && path == "/login") {
            return try await next(request, context)
        }
        guard await access.isRequired() else { return try await next(request, context) }
        let bearer = Self.bearer(request.headers[.authorization])
        let cookie = request.cookies[Self.cookieName]?.value
        if let given = bearer ?? cookie {
            if bearer != nil, let seconds = throttle.wait(for: context.clientAddress) {
                var refusal = APIError(.tooManyRequests, "too many wrong tokens from this address: try again in \(seconds) s")
                refusal.retryAfterSeconds = seconds
                throw refusal
            }
            let identity = bearer != nil ? await access.identity(bearer: given) : await access.identity(session: given)
            if let identity {
                guard identity.role == .admin || !Self.needsAdmin(request, route: context.endpointPath) else {
                    if let (action, subject) = AuditMiddleware.action(request, context: context) {
                        audit.record(identity, address: context.clientAddress, action, subject: subject, outcome: "403 viewer")
                    }
                    throw APIError(.forbidden, "\(identity.user) is a viewer: only an admin may \(Self.adminAction(request, route: context.endpointPath))")
                }
                var context = context
                context.identity = identity
                return try await next(request, context)
            }
            if bearer != nil { throttle.failed(context.clientAddress) }
        }
        let clear = bearer == nil && cookie != nil
        if request.method == .post && path == "/logout" {
            return Response(status: .seeOther, headers: [.location: "/", .setCookie: LoginRoutes.clearedCookie, .cacheControl: "no-store"])
        }
        if request.method == .get && path == "/" {
            var form = LoginPage.response(status: .unauthorized, failed: false)
            if clear { form.headers[.setCookie] = LoginRoutes.clearedCookie }
            return form
        }
        var refusal = APIError(.unauthorized, "this server needs a token: send Authorization: Bearer TOKEN, or log in at /")
        if clear { refusal.setCookie = LoginRoutes.clearedCookie }
        throw refusal
    }

    /// The routes only an admin may use (by their pattern), besides every method but GET and
    /// HEAD: clips, the audit trail, `/metrics`, and the peers' question of when a node last
    /// reached the database. Decided by the route the router matched (`route`), never by the
    /// path as written: `/api/v1/audit/` and `//metrics` reach the same routes.
    static let adminRoutes: Set<String> = ["/api/v1/cameras/{name}/clip.mp4", "/api/v1/audit", "/metrics", "/api/v1/cluster/witness"]

    /// What only an admin may do: change anything (every method but GET and HEAD, logging in
    /// and out aside) and use `adminRoutes`. A path no route matched (`route` nil) is a 404
    /// whoever asks.
    static func needsAdmin(_ request: Request, route: String?) -> Bool {
        if request.method != .get && request.method != .head { return route != "/logout" }
        return route.map(adminRoutes.contains) ?? false
    }

    private static func adminAction(_ request: Request, route: String?) -> String {
        if request.method != .get && request.method != .head { return "change anything (\(request.method) \((route ?? request.uri.path).prefix(100)))" }
        switch route {
        case "/api/v1/cameras/{name}/clip.mp4": return "download clips"
        case "/api/v1/audit": return "read the audit trail"
        default: return "read \((route ?? "").prefix(100))"
        }
    }

    /// The app's manifest and icons: a browser fetches them without the session cookie (to
    /// show the tab's icon on the login form, to install the page), and they tell nothing.
    static func isPublic(_ path: String) -> Bool {
        path == "/favicon.ico" || path == "/static/manifest.webmanifest" || (path.hasPrefix("/static/icon") && PageFiles.type(of: String(path.dropFirst(8)))?.hasPrefix("image/") == true)
    }

    /// The token of `Authorization: Bearer TOKEN`; the scheme's name is case-insensitive
    /// (RFC 9110), spaces around the token are not part of it.
    static func bearer(_ header: String?) -> String? {
        guard let header, let space = header.firstIndex(of: " "), header[..<space].lowercased() == "bearer" else { return nil }
        return header[header.index(after: space)...].trimmingCharacters(in: .whitespaces)
    }
}
