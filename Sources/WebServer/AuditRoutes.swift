import Access
import Capture
import Foundation
import Hummingbird
import Recorder

/// Writes the audit trail of what people do through the web server, read from each request's
/// path once it is answered: watching live (WebSocket or MJPEG), playing a recording, downloading
/// a clip, marking an event, reading the trail. One place that knows which requests count,
/// instead of a line in each route. A refused request is written too, with its status.
/// (Logging in and out are written by `LoginRoutes`, which knows who tried.)
struct AuditMiddleware: RouterMiddleware {
    typealias Context = WebRequestContext
    let audit: AuditLog

    func handle(_ request: Request, context: Context, next: (Request, Context) async throws -> Response) async throws -> Response {
        guard let (action, subject) = Self.action(request, context: context) else { return try await next(request, context) }
        do {
            let response = try await next(request, context)
            let status = response.status.code
            audit.record(context.identity, address: context.clientAddress, action, subject: subject, outcome: status < 400 ? "ok" : "\(status)")
            return response
        } catch {
            let status = (error as? any HTTPResponseError)?.status.code ?? 500
            audit.record(context.identity, address: context.clientAddress, action, subject: subject, outcome: "\(status)")
            throw error
        }
    }

    /// `[cluster]`: another node passing on a person's request, written in that node's trail
    /// (where the person is), not again here. Only with the site's token (`token_file`, what
    /// nodes send each other), or on a server that asks nobody for anything: the header alone,
    /// which anyone can send, skips nothing where people log in.
    static func forwarded(_ request: Request, _ context: Context) -> Bool {
        let identity = context.identity
        let peer = (identity.user == Identity.tokenFile.user && identity.credential == Identity.tokenFile.credential)
            || (identity.user == Identity.anyone.user && identity.credential == Identity.anyone.credential)
        return peer && request.headers[ClusterRoutes.forwardedBy] != nil
    }

    /// What a request does for the trail, and on what; nil: it is not written. Decided by the
    /// route the router matched, so `/api/v1/recordings/5/file/` is written like `…/file`.
    static func action(_ request: Request, context: Context) -> (AuditLog.Action, String)? {
        let name = context.parameters.get("name").map { $0.removingPercentEncoding ?? $0 } ?? ""
        let id = context.parameters.get("id") ?? ""
        switch (request.method, context.endpointPath) {
        case (.get, "/api/v1/cameras/{name}/live"), (.get, "/api/v1/cameras/{name}/live.mjpeg"), (.get, "/api/v1/cluster/cameras/{name}/live"):
            return forwarded(request, context) ? nil : (.live, name)
        case (.get, "/api/v1/cameras/{name}/clip.mp4"):
            let query = request.uri.queryParameters
            return (.clip, "\(name) from \(query["from"].map(String.init) ?? "?") to \(query["to"].map(String.init) ?? "?")")
        case (.get, "/api/v1/recordings/{id}/file"): return (.play, "recording \(id)")
        case (.post, "/api/v1/events/{id}/reviewed"): return (.mark, "event \(id)")
        case (.get, "/api/v1/cluster/recordings/{id}/file"):
            return forwarded(request, context) ? nil : (.play, "site recording \(id)")
        case (.post, "/api/v1/cluster/events/{id}/reviewed"):
            return forwarded(request, context) ? nil : (.mark, "site event \(id)")
        case (.get, "/api/v1/audit"): return (.audit, request.uri.query ?? "")
        default: return nil
        }
    }
}

/// `GET /api/v1/audit` (admins only, `AuthMiddleware.needsAdmin`): the trail from `from`
/// (default: the last 24 hours), of one `user` when given, oldest first, at most `limit` rows
/// (default and most 1,000); `vigil audit` lists the same from the command line.
struct AuditRoutes {
    struct Row: Encodable {
        let at, user, credential, address, action, subject, outcome: String
    }
    let audit: AuditLog
    let time: APITime

    static let maxRows = 1000

    func add(to router: Router<WebRequestContext>) {
        router.get("/api/v1/audit") { request, _ in
            let since = try time.instant(request, "from", end: false) ?? (WallTime.clamped(Date()) - 86_400_000_000_000)
            let query = request.uri.queryParameters
            let user = query["user"].map(String.init)
            var limit = Self.maxRows
            if let text = query["limit"] {
                guard let n = RequestValues.decimal(text), (1...Int64(Self.maxRows)).contains(n) else {
                    throw APIError(.badRequest, "limit must be a whole number from 1 to \(Self.maxRows)")
                }
                limit = Int(n)
            }
            let rows: [RecordingIndex.AuditRow]
            do { rows = try await audit.rows(since: since, user: user, limit: limit) } catch {
                throw APIError(.internalServerError, "the audit trail cannot be read from the index: \(error)")
            }
            return JSONBody.response(["entries": rows.map {
                Row(at: time.string($0.atNanos), user: $0.user, credential: $0.credential, address: $0.address, action: $0.action,
                    subject: $0.subject, outcome: $0.outcome)
            }])
        }
    }
}
