import Capture
import Foundation
import Hummingbird
import Recorder

/// Event review: `GET /api/v1/events` lists motion events across cameras, newest first, a page
/// at a time; `POST /api/v1/events/{id}/reviewed` marks one reviewed (or not) in the index
/// (same-origin only, as every write: `SameOriginMiddleware`).
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
        /// `before=site:ID`: a page of the site's catalogue goes on after its event ID.
        var beforeInSite: RecordingIndex.MotionEventCursor?
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
            if api.site != nil, before.hasPrefix("site:") {
                query.beforeInSite = try Self.siteCursor(before)
            } else {
                guard let id = RequestValues.id(before),
                      let event = try await ApiRoutes.reading(api.recorder.index, { try $0.motionEvent(id: id) }) else {
                    throw APIError(.badRequest, "before=\(before.prefix(32)) is not the id of a motion event")
                }
                query.before = RecordingIndex.MotionEventCursor(event)
            }
        }
        return query
    }

    /// `before=site:START:ID` (a page of the site's catalogue goes on after its event ID, which
    /// began at START): no lookup, so an event deleted meanwhile does not end the listing.
    static func siteCursor(_ text: String) throws(APIError) -> RecordingIndex.MotionEventCursor {
        let parts = text.dropFirst(5).split(separator: ":", omittingEmptySubsequences: false)
        guard parts.count == 2, let start = RequestValues.decimal(parts[0]), let id = RequestValues.decimal(parts[1]), id > 0 else {
            throw APIError(.badRequest, "before=\(text.prefix(48)) is not site:START:ID of a motion event (the next URL of a page)")
        }
        return RecordingIndex.MotionEventCursor(startNanos: start, id: id)
    }

    struct ListJSON: Encodable {
        let events: [EventJSON]
        /// The next page (the same filters, `before` the last event here); nil after the last.
        let next: String?
        /// `[cluster]`: false when every node's events are listed (from the catalogue), true when
        /// the catalogue did not answer and only this node's are; nil: no cluster.
        var partial: Bool? = nil

        func encode(to encoder: Encoder) throws {
            var c = encoder.container(keyedBy: CodingKeys.self)
            try c.encode(events, forKey: .events)
            try c.encode(next, forKey: .next)
            try c.encodeIfPresent(partial, forKey: .partial)
        }

        enum CodingKeys: String, CodingKey { case events, next, partial }
    }

    /// A page of events: with `[cluster]` every node's from the site's catalogue (this node's
    /// reach it within a second), else, or when it does not answer, this node's from its index.
    func list(_ query: Query) async throws(APIError) -> ListJSON {
        // One more than the page holds: whether there is a next page, without a second query.
        let asked = query.limit + 1
        if let site = api.site, query.before == nil {
            switch await ApiRoutes.siteIO.run({
                Result {
                    try site.events(
                        camera: query.camera, from: query.from, to: query.to, unreviewedOnly: query.unreviewedOnly, before: query.beforeInSite,
                        limit: asked)
                }
            }) {
            case .success(let events):
                let page = Array(events.prefix(query.limit))
                let next = events.count > query.limit
                    ? page.last.map { Self.nextURL(query.given, before: "site:\($0.event.startNanos):\($0.event.id)") } : nil
                return ListJSON(events: try await api.eventsJSON(page), next: next, partial: false)
            case .failure(let error):
                // A page of the site cannot go on from this node's index.
                if query.beforeInSite != nil { throw APIError(.serviceUnavailable, "the cluster's catalogue is not answering: \(error)") }
            }
        }
        let events = try await ApiRoutes.reading(api.recorder.index) {
            try $0.motionEventsNewestFirst(
                camera: query.camera, from: query.from, to: query.to, unreviewedOnly: query.unreviewedOnly, before: query.before,
                limit: asked)
        }
        let page = events.prefix(query.limit)
        let next = events.count > query.limit ? page.last.map { Self.nextURL(query.given, before: "\($0.id)") } : nil
        return ListJSON(events: page.map(api.eventJSON), next: next, partial: api.site == nil ? nil : true)
    }

    /// What a query value may hold unescaped: RFC 3986's unreserved characters, and ":" of times.
    private static let allowed = CharacterSet(charactersIn: "ABCDEFGHIJKLMNOPQRSTUVWXYZabcdefghijklmnopqrstuvwxyz0123456789-._~:")

    /// `/api/v1/events?` with the filters as they were given and `before=ID` (or `site:ID`).
    static func nextURL(_ given: [(key: String, value: String)], before id: String) -> String {
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
        guard let event = try await markHere(reviewed: reviewed, { try $0.motionEvent(id: id) }) else {
            throw APIError(.notFound, "no motion event with id \(id)")
        }
        return api.eventJSON(event)
    }

    /// Marks the event `find` finds in this node's index, and with `[cluster]` in the catalogue
    /// too, so every node's page shows the mark at once (the journal would bring a mark later,
    /// but never takes one away: see `RecordingCatalog.putMotionEvent`). The catalogue away
    /// does not fail the mark here. Returns the event as marked; nil when there is none.
    func markHere(
        reviewed: Bool, _ find: @escaping @Sendable (RecordingIndex) throws -> RecordingIndex.MotionEvent?
    ) async throws(APIError) -> RecordingIndex.MotionEvent? {
        let now = WallTime.clamped(Date())
        let event = try await ApiRoutes.writing(api.recorder.index) { index -> RecordingIndex.MotionEvent? in
            guard let event = try find(index), try index.setMotionEventReviewed(id: event.id, at: reviewed ? now : nil) else { return nil }
            return try index.motionEvent(id: event.id)
        }
        if let event, let site = api.site {
            _ = await ApiRoutes.siteIO.run({
                try? site.setEventReviewed(node: site.node, camera: event.camera, startNanos: event.startNanos, at: event.reviewedNanos)
            })
        }
        return event
    }
}
