import CheckedMath
import Recorder

/// One motion event in the API (`/api/v1/events`, a camera's events, `POST …/reviewed`); nil
/// values are written as null, not left out.
struct EventJSON: Encodable {
    let id: Int64
    let camera: String
    let start: String
    /// nil while the event is under way.
    let end: String?
    /// nil while the event is under way (or when its times cannot be subtracted); 0.1 s steps.
    let durationSeconds: Double?
    let peakAreaPercent: Double
    let thumbnail: String?
    let reviewed: Bool
    /// Where `POST {"reviewed": …}` marks it: `/api/v1/events/ID/reviewed` for this node's index,
    /// `/api/v1/cluster/events/ID/reviewed` for the site's catalogue (its id there).
    let reviewURL: String
    /// The node that recorded it (`[cluster]`); nil: no cluster.
    let node: String?

    enum CodingKeys: String, CodingKey {
        case id, camera, start, end, thumbnail, reviewed, node
        case durationSeconds = "duration_seconds"
        case peakAreaPercent = "peak_area_percent"
        case reviewURL = "review_url"
    }

    func encode(to encoder: Encoder) throws {
        var c = encoder.container(keyedBy: CodingKeys.self)
        try c.encode(id, forKey: .id)
        try c.encode(camera, forKey: .camera)
        try c.encode(start, forKey: .start)
        try c.encode(end, forKey: .end)
        try c.encode(durationSeconds, forKey: .durationSeconds)
        try c.encode(peakAreaPercent, forKey: .peakAreaPercent)
        try c.encode(thumbnail, forKey: .thumbnail)
        try c.encode(reviewed, forKey: .reviewed)
        try c.encode(reviewURL, forKey: .reviewURL)
        try c.encode(node, forKey: .node)
    }
}

extension ApiRoutes {
    /// An event of this node's index, as every listing and the reviewed route write it.
    func eventJSON(_ event: RecordingIndex.MotionEvent) -> EventJSON {
        eventJSON(event, base: "/api/v1/events/\(event.id)", node: site?.node)
    }

    /// An event of the site's catalogue, by the catalogue's id. Its picture and mark go through
    /// the catalogue's routes to the node that recorded it, or, when this node did (`here`: its
    /// row in this node's index), through this node's own routes, which need no catalogue.
    func eventJSON(_ event: SiteEvent, here: RecordingIndex.MotionEvent? = nil) -> EventJSON {
        eventJSON(event.event, base: here.map { "/api/v1/events/\($0.id)" } ?? "/api/v1/cluster/events/\(event.event.id)", node: event.node)
    }

    /// Events of the catalogue as the API writes them; this node's own found in its index.
    func eventsJSON(_ events: [SiteEvent]) async throws(APIError) -> [EventJSON] {
        let mine = events.filter { $0.node == site?.node }.map(\.event)
        var here: [String: RecordingIndex.MotionEvent] = [:]
        if !mine.isEmpty { here = try await Self.reading(recorder.index) { index in
            var found: [String: RecordingIndex.MotionEvent] = [:]
            for event in mine { found["\(event.startNanos) \(event.camera)"] = try index.motionEvent(camera: event.camera, startNanos: event.startNanos) }
            return found
        } }
        return events.map { eventJSON($0, here: $0.node == site?.node ? here["\($0.event.startNanos) \($0.event.camera)"] : nil) }
    }

    private func eventJSON(_ event: RecordingIndex.MotionEvent, base: String, node: String?) -> EventJSON {
        EventJSON(
            id: event.id, camera: event.camera, start: time.string(event.startNanos), end: event.endNanos.map(time.string),
            durationSeconds: event.endNanos.flatMap { $0.subtracting(event.startNanos) }.map { (Double(max(0, $0)) / 1e8).rounded() / 10 },
            peakAreaPercent: (event.peakPercent * 10).rounded() / 10,
            thumbnail: event.picture == nil ? nil : base + "/thumbnail.jpg", reviewed: event.reviewedNanos != nil,
            reviewURL: base + "/reviewed", node: node)
    }
}
