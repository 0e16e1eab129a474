import Foundation
import Hummingbird

/// With a token configured, every request but `/healthz`, `POST /login`, `POST /logout` and the
/// app's manifest and icons needs `Authorization: Bearer TOKEN` or the `vigil_session` cookie
/// that `POST /login` sets; others get 401 JSON, and a browser asking for the page gets the
/// login form instead. Without a token
/// (loopback only: the configuration refuses anything else) nothing is checked.
///
/// A wrong token, sent as a bearer or a cookie, counts against its address like one typed into
/// the login form (`LoginThrottle`): the API is no way around the form's waits. A wrong cookie
/// is cleared in the answer, so a browser that kept an old one counts once, not per request.
struct AuthMiddleware: RouterMiddleware {
    typealias Context = WebRequestContext
    let token: String
    let throttle: LoginThrottle

    static var cookieName: String { "vigil_session" }

    func handle(_ request: Request, context: Context, next: (Request, Context) async throws -> Response) async throws -> Response {
        let path = request.uri.path
        let isSessionForm = request.method == .post && (path == "/login" || path == "/logout")
        if path == "/healthz" || isSessionForm || Self.isPublic(path) {
            return try await next(request, context)
        }
        let bearer = Self.bearer(request.headers[.authorization])
        let cookie = request.cookies[Self.cookieName]?.value
        if let given = bearer ?? cookie {
            let address = context.channel.remoteAddress?.ipAddress ?? "unknown"
            if let seconds = throttle.wait(for: address) {
                var refusal = APIError(.tooManyRequests, "too many wrong tokens from this address: try again in \(seconds) s")
                refusal.retryAfterSeconds = seconds
                throw refusal
            }
            if Self.equal(given, token) { return try await next(request, context) }
            throttle.failed(address)
        }
        let clear = bearer == nil && cookie != nil
        if request.method == .get && path == "/" {
            var form = LoginPage.response(status: .unauthorized, failed: false)
            if clear { form.headers[.setCookie] = LoginRoutes.clearedCookie }
            return form
        }
        var refusal = APIError(.unauthorized, "this server needs a token: send Authorization: Bearer TOKEN, or log in at /")
        if clear { refusal.setCookie = LoginRoutes.clearedCookie }
        throw refusal
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

    /// Compares every byte whatever the first difference is, so the time taken says nothing
    /// about how much of a guess was right.
    static func equal(_ a: String, _ b: String) -> Bool {
        let x = Array(a.utf8), y = Array(b.utf8)
        var difference = UInt8(x.count == y.count ? 0 : 1)
        for i in 0..<max(x.count, y.count) {
            difference |= (i < x.count ? x[i] : 0) ^ (i < y.count ? y[i] : 0)
        }
        return difference == 0
    }
}

/// The session: `POST /login` (form field `token`) sets the session cookie and sends the browser
/// to `/`; `POST /logout` clears it (it needs no session, and exists without a token too, where
/// it only sends the browser to `/`); `GET /api/v1/session` tells the page whether a token is
/// needed, so it shows "Log out" only then. The cookie holds the token itself: HttpOnly (the
/// page's scripts cannot read it), SameSite=Strict (no other site's page can make the browser
/// send it), kept 30 days. Logging in and out are same-origin only (`SameOriginMiddleware`).
enum LoginRoutes {
    struct SessionJSON: Encodable { let tokenRequired: Bool }

    /// The session cookie removed (logging out, or an old token's cookie refused).
    static let clearedCookie = "\(AuthMiddleware.cookieName)=; Path=/; Max-Age=0; HttpOnly; SameSite=Strict"

    static func add(to router: Router<WebRequestContext>, token: String?, throttle: LoginThrottle) {
        router.get("/api/v1/session") { _, _ in JSONBody.response(SessionJSON(tokenRequired: token != nil)) }
        router.post("/logout") { request, _ -> Response in
            Response(status: .seeOther, headers: [.location: "/", .setCookie: clearedCookie, .cacheControl: "no-store"])
        }
        guard let token else {
            router.post("/login") { _, _ -> Response in
                throw APIError(.notFound, "this server asks for no token ([http] token_file is not set): there is nothing to log in to")
            }
            return
        }
        router.post("/login") { request, context -> Response in
            let address = context.channel.remoteAddress?.ipAddress ?? "unknown"
            if let seconds = throttle.wait(for: address) {
                var refusal = LoginPage.response(status: .tooManyRequests, failed: true, waitSeconds: seconds)
                refusal.headers[.retryAfter] = String(seconds)
                return refusal
            }
            var request = request
            let body = try await request.collectBody(upTo: 4096)
            let given = formField("token", in: String(buffer: body)) ?? ""
            guard AuthMiddleware.equal(given, token) else {
                throttle.failed(address)
                return LoginPage.response(status: .unauthorized, failed: true)
            }
            throttle.succeeded(address)
            let cookie = "\(AuthMiddleware.cookieName)=\(token); Path=/; Max-Age=2592000; HttpOnly; SameSite=Strict"
            return Response(status: .seeOther, headers: [.location: "/", .setCookie: cookie])
        }
    }

    /// A field of an `application/x-www-form-urlencoded` body.
    static func formField(_ name: String, in body: String) -> String? {
        for pair in body.split(separator: "&") {
            let parts = pair.split(separator: "=", maxSplits: 1, omittingEmptySubsequences: false)
            guard parts.count == 2, parts[0] == name else { continue }
            return String(parts[1]).replacingOccurrences(of: "+", with: " ").removingPercentEncoding
        }
        return nil
    }
}

/// The small form a browser gets instead of the page until it has logged in.
enum LoginPage {
    /// `waitSeconds`: too many wrong tokens from this address (`LoginThrottle`), said on the form.
    static func response(status: HTTPResponse.Status, failed: Bool, waitSeconds: Int64? = nil) -> Response {
        let alert = waitSeconds.map { "Too many wrong tokens from this address: try again in \($0) s." } ?? (failed ? "That token is not the right one." : nil)
        let html = """
            <!doctype html><html lang="en"><head><meta charset="utf-8"><link rel="icon" href="/static/icon.svg" type="image/svg+xml"><meta name="viewport" content="width=device-width, initial-scale=1">
            <title>Vigil: log in</title></head><body style="font-family: sans-serif; max-width: 24em; margin: 3em auto">
            <h1>Vigil</h1>\(alert.map { "<p role=\"alert\">\($0)</p>" } ?? "")
            <form method="post" action="/login"><label>Token <input type="password" name="token" autocomplete="current-password" autofocus required></label>
            <button type="submit">Log in</button></form>
            <p>The token is the first line of the file that <code>token_file</code> names in the <code>[http]</code> section of the configuration.</p>
            </body></html>
            """
        return Response(
            status: status, headers: [.contentType: "text/html; charset=utf-8", .cacheControl: "no-store"],
            body: .init(byteBuffer: ByteBuffer(string: html)))
    }
}
