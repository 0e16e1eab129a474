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
/// A wrong token or session, sent as a bearer or a cookie, counts against its address like a
/// wrong password at the form (`LoginThrottle`): the API is no way around the form's waits. A
/// wrong cookie is cleared in the answer, so a browser that kept an old one counts once.
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
            if let seconds = throttle.wait(for: context.clientAddress) {
                var refusal = APIError(.tooManyRequests, "too many wrong tokens from this address: try again in \(seconds) s")
                refusal.retryAfterSeconds = seconds
                throw refusal
            }
            let identity = bearer != nil ? await access.identity(bearer: given) : await access.identity(session: given)
            if let identity {
                guard identity.role == .admin || !Self.needsAdmin(request) else {
                    if let (action, subject) = AuditMiddleware.action(request) {
                        audit.record(identity, address: context.clientAddress, action, subject: subject, outcome: "403 viewer")
                    }
                    throw APIError(.forbidden, "\(identity.user) is a viewer: only an admin may \(Self.adminAction(request))")
                }
                var context = context
                context.identity = identity
                return try await next(request, context)
            }
            throttle.failed(context.clientAddress)
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

    /// What only an admin may do: change anything (every method but GET and HEAD, logging in
    /// and out aside), download a clip, read the audit trail, and speak for the site (the
    /// cluster's peer routes, `/metrics`).
    static func needsAdmin(_ request: Request) -> Bool {
        let path = request.uri.path
        if request.method != .get && request.method != .head { return path != "/logout" }
        return path.hasSuffix("/clip.mp4") || path == "/api/v1/audit" || path.hasPrefix("/api/v1/cluster/") || path == "/metrics"
    }

    private static func adminAction(_ request: Request) -> String {
        let path = request.uri.path
        if request.method != .get && request.method != .head { return "change anything (\(request.method) \(path.prefix(100)))" }
        if path.hasSuffix("/clip.mp4") { return "download clips" }
        return path == "/api/v1/audit" ? "read the audit trail" : "read \(path.prefix(100))"
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
