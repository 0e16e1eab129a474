import Capture
import Foundation
import Hummingbird
import Recorder

/// Event review: `GET /api/v1/events` lists motion events across cameras, newest first, a page
/// at a time; `POST /api/v1/events/{id}/reviewed` marks one reviewed (or not) in the index. The
/// POST is the API's only write besides logging in and out: same-origin only (`SameOriginMiddleware`).
struct EventRoutes: Sendable {
    let api: ApiRoutes
    /// Events per page when the query says no `limit`, and the most it may ask for.
    static let defaultLimit = 100
    static let maxLimit = 500
    /// `{"reviewed": false}` is 19 bytes; anything much longer is not this route's body.
    static let maxBody = 1024

    func add(to router: Router<WebRequestContext>) {
        router.get("/api/v1/events") { request, _ in
            JSONBody.response(try await list(try await query(request)))
        }
        router.post("/api/v1/events/:id/reviewed") { request, context in
            guard let id = RequestValues.id(context.parameters.get("id")) else {
                throw APIError(.notFound, "no motion event with id \(context.parameters.get("id")?.prefix(32) ?? "")")
            }
            var request = request
            let reviewed = try Self.reviewed(in: try await request.collectBody(upTo: Self.maxBody))
            return JSONBody.response(try await mark(id, reviewed: reviewed))
        }
    }

    /// What `GET /api/v1/events` was asked, checked; `given` keeps the filters as written, for `next`.
    struct Query: Sendable {
        var camera: String?
        var from: Int64?
        var to: Int64?
        var unreviewedOnly = false
        var limit = EventRoutes.defaultLimit
        var before: RecordingIndex.MotionEventCursor?
        var given: [(key: String, value: String)] = []
    }

    func query(_ request: Request) async throws(APIError) -> Query {
        let parameters = request.uri.queryParameters
        func text(_ key: String) -> String? { parameters[Substring(key)].map(String.init) }
        var query = Query()
        if let camera = text("camera") {
            let name = try RequestValues.cameraName(decoded: camera)
            try await api.requireCamera(name)
            query.camera = name
            query.given.append(("camera", name))
        }
        query.from = try api.time.instant(request, "from", end: false)
        query.to = try api.time.instant(request, "to", end: true)
        if let from = query.from, let to = query.to, from > to { throw APIError(.badRequest, "from must come before to") }
        for key in ["from", "to"] { if let value = text(key) { query.given.append((key, value)) } }
        if let unreviewed = text("unreviewed") {
            switch unreviewed {
            case "true": query.unreviewedOnly = true
            case "false": query.unreviewedOnly = false
            default: throw APIError(.badRequest, "unreviewed=\(unreviewed.prefix(32)) is not true or false")
            }
            query.given.append(("unreviewed", unreviewed))
        }
        if let limit = text("limit") {
            guard let n = RequestValues.decimal(Substring(limit)), (1...Int64(Self.maxLimit)).contains(n) else {
                throw APIError(.badRequest, "limit=\(limit.prefix(32)) is not a number from 1 to \(Self.maxLimit)")
            }
            query.limit = Int(n)
            query.given.append(("limit", limit))
        }
        if let before = text("before") {
            guard let id = RequestValues.id(before),
                  let event = try await ApiRoutes.reading(api.recorder.index, { try $0.motionEvent(id: id) }) else {
                throw APIError(.badRequest, "before=\(before.prefix(32)) is not the id of a motion event")
            }
            query.before = RecordingIndex.MotionEventCursor(event)
        }
        return query
    }

    struct ListJSON: Encodable {
        let events: [EventJSON]
        /// The next page (the same filters, `before` the last event here); nil after the last.
        let next: String?

        func encode(to encoder: Encoder) throws {
            var c = encoder.container(keyedBy: CodingKeys.self)
            try c.encode(events, forKey: .events)
            try c.encode(next, forKey: .next)
        }

        enum CodingKeys: String, CodingKey { case events, next }
    }

    func list(_ query: Query) async throws(APIError) -> ListJSON {
        // One more than the page holds: whether there is a next page, without a second query.
        let events = try await ApiRoutes.reading(api.recorder.index) {
            try $0.motionEventsNewestFirst(
                camera: query.camera, from: query.from, to: query.to, unreviewedOnly: query.unreviewedOnly, before: query.before,
                limit: query.limit + 1)
        }
        let page = events.prefix(query.limit)
        let next = events.count > query.limit ? page.last.map { Self.nextURL(query.given, before: $0.id) } : nil
        return ListJSON(events: page.map(api.eventJSON), next: next)
    }

    /// What a query value may hold unescaped: RFC 3986's unreserved characters, and ":" of times.
    private static let allowed = CharacterSet(charactersIn: "ABCDEFGHIJKLMNOPQRSTUVWXYZabcdefghijklmnopqrstuvwxyz0123456789-._~:")

    /// `/api/v1/events?` with the filters as they were given and `before=ID`.
    static func nextURL(_ given: [(key: String, value: String)], before id: Int64) -> String {
        let pairs = given.map { "\($0.key)=\($0.value.addingPercentEncoding(withAllowedCharacters: allowed) ?? "")" } + ["before=\(id)"]
        return "/api/v1/events?" + pairs.joined(separator: "&")
    }

    /// The body of the POST: empty (reviewed), or `{"reviewed": true|false}` (missing: true).
    static func reviewed(in body: ByteBuffer) throws(APIError) -> Bool {
        /// `reviewed` may be left out (true), but when given it is a boolean: not null, not 1.
        struct Body: Decodable {
            let reviewed: Bool
            enum CodingKeys: CodingKey { case reviewed }
            init(from decoder: any Decoder) throws {
                let fields = try decoder.container(keyedBy: CodingKeys.self)
                reviewed = fields.contains(.reviewed) ? try fields.decode(Bool.self, forKey: .reviewed) : true
            }
        }
        guard body.readableBytes > 0 else { return true }
        do {
            return try JSONDecoder().decode(Body.self, from: Data(body.readableBytesView)).reviewed
        } catch {
            throw APIError(.badRequest, "the body is not {\"reviewed\": true} or {\"reviewed\": false}")
        }
    }

    /// Marks event `id` in the index (the writer's connection, off the cooperative pool) and
    /// answers it as the listing would; 404 when there is no such event.
    func mark(_ id: Int64, reviewed: Bool) async throws(APIError) -> EventJSON {
        let now = WallTime.clamped(Date())
        let event = try await ApiRoutes.writing(api.recorder.index) { index -> RecordingIndex.MotionEvent? in
            guard try index.setMotionEventReviewed(id: id, at: reviewed ? now : nil) else { return nil }
            return try index.motionEvent(id: id)
        }
        guard let event else { throw APIError(.notFound, "no motion event with id \(id)") }
        return api.eventJSON(event)
    }
}
