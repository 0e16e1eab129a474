import Access
import Foundation
import Hummingbird

/// The session: `POST /login` (form fields `user` and `password`; without a user, `password`
/// is an API token, token_file's included, as before users existed; `token` is read as
/// `password`) starts a session and sends the browser to `/`; `POST /logout` ends it;
/// `GET /api/v1/session` tells the page who is logged in and with what role.
///
/// The cookie holds an opaque random session id, never a token or password: the index keeps
/// only its SHA-256, with the user, when it began and was last used, the address and the user
/// agent (`vigil session list`). HttpOnly (the page's scripts cannot read it), SameSite=Strict,
/// `Secure` when a trusted proxy says the browser came over https; it lives as long as the
/// session may (`[http] session_days`). Logging in and out are same-origin only
/// (`SameOriginMiddleware`). Wrong passwords wait per address and per user (`LoginThrottle`).
struct LoginRoutes {
    struct SessionJSON: Encodable {
        let tokenRequired: Bool
        let user: String?
        let role: String?
    }

    let access: AccessBook
    let throttle: LoginThrottle
    let audit: AuditLog
    let sessionDays: Int
    /// Logins being checked at once (each a scrypt hash on one lane): more are answered 503
    /// at once instead of queueing minutes of hashing.
    let checking = Places(limit: 8)

    /// The session cookie removed (logging out, or an old session's cookie refused).
    static let clearedCookie = "\(AuthMiddleware.cookieName)=; Path=/; Max-Age=0; HttpOnly; SameSite=Strict"

    func add(to router: Router<WebRequestContext>) {
        router.get("/api/v1/session") { _, context in
            let required = await access.isRequired()
            return JSONBody.response(SessionJSON(
                tokenRequired: required, user: required ? context.identity.user : nil, role: required ? context.identity.role.rawValue : nil))
        }
        router.post("/logout") { _, context -> Response in
            if context.identity.sessionHash != nil {
                await access.logout(context.identity)
                audit.record(context.identity, address: context.clientAddress, .logout, subject: "")
            }
            return Response(status: .seeOther, headers: [.location: "/", .setCookie: Self.clearedCookie, .cacheControl: "no-store"])
        }
        router.post("/login") { request, context -> Response in
            guard await access.isRequired() else {
                throw APIError(.notFound, "this server asks for no login (no token_file and no users): there is nothing to log in to")
            }
            var request = request
            let body = String(buffer: try await request.collectBody(upTo: 4096))
            let user = Self.formField("user", in: body) ?? ""
            let secret = Self.formField("password", in: body) ?? Self.formField("token", in: body) ?? ""
            return await login(user: String(user.prefix(RequestValues.maxNameLength)), secret: secret, request: request, context: context)
        }
    }

    private func login(user: String, secret: String, request: Request, context: WebRequestContext) async -> Response {
        let address = context.clientAddress
        let keys = [address] + (user.isEmpty ? [] : ["user \(user)"])
        if let seconds = keys.compactMap(throttle.wait).max() {
            var refusal = LoginPage.response(status: .tooManyRequests, failed: true, waitSeconds: seconds)
            refusal.headers[.retryAfter] = String(seconds)
            return refusal
        }
        // Counted before the check, not after: logins sent at once would all pass the wait
        // above while the first were still being hashed. The right password clears it.
        keys.forEach(throttle.failed)
        guard let place = checking.take() else {
            var busy = LoginPage.response(status: .serviceUnavailable, failed: true, waitSeconds: 1)
            busy.headers[.retryAfter] = "1"
            return busy
        }
        let agent = request.headers[.userAgent] ?? ""
        let session = user.isEmpty
            ? await access.login(token: secret, address: address, userAgent: agent)
            : await access.login(user: user, password: secret, address: address, userAgent: agent)
        withExtendedLifetime(place) {}  // the place is held until the check is over, not to its last mention
        guard let session else {
            let tried = Identity(user: user.isEmpty ? "-" : user, role: .viewer, credential: user.isEmpty ? "token" : "password")
            audit.record(tried, address: address, .loginFailed, subject: "", outcome: "wrong \(user.isEmpty ? "token" : "name or password")")
            return LoginPage.response(status: .unauthorized, failed: true)
        }
        keys.forEach(throttle.succeeded)
        audit.record(session.identity, address: address, .login, subject: "")
        let cookie = "\(AuthMiddleware.cookieName)=\(session.id); Path=/; Max-Age=\(sessionDays * 86_400); HttpOnly; SameSite=Strict"
            + (context.viaHTTPS ? "; Secure" : "")
        return Response(status: .seeOther, headers: [.location: "/", .setCookie: cookie, .cacheControl: "no-store"])
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
    /// `waitSeconds`: too many wrong tries from this address or for this user (`LoginThrottle`), said on the form.
    static func response(status: HTTPResponse.Status, failed: Bool, waitSeconds: Int64? = nil) -> Response {
        let alert = waitSeconds.map { "Too many wrong tries: try again in \($0) s." } ?? (failed ? "That name and password (or token) are not right." : nil)
        let html = """
            <!doctype html><html lang="en"><head><meta charset="utf-8"><link rel="icon" href="/static/icon.svg" type="image/svg+xml"><meta name="viewport" content="width=device-width, initial-scale=1">
            <title>Vigil: log in</title></head><body style="font-family: sans-serif; max-width: 24em; margin: 3em auto">
            <h1>Vigil</h1>\(alert.map { "<p role=\"alert\">\($0)</p>" } ?? "")
            <form method="post" action="/login">
            <p><label>Name <input name="user" autocomplete="username" autofocus></label></p>
            <p><label>Password or token <input type="password" name="password" autocomplete="current-password" required></label></p>
            <button type="submit">Log in</button></form>
            <p>A user made with <code>vigil user add</code> logs in with their name and password. Without a name, the password field takes an API token: one of <code>vigil token add</code>, or the first line of the file that <code>token_file</code> names in the <code>[http]</code> section of the configuration.</p>
            </body></html>
            """
        return Response(
            status: status, headers: [.contentType: "text/html; charset=utf-8", .cacheControl: "no-store"],
            body: .init(byteBuffer: ByteBuffer(string: html)))
    }
}
