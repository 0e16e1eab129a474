import Capture
import CheckedMath
import Foundation
import Hummingbird
import Logging
import Plumbing
import Recorder

/// `/healthz` and the JSON API about cameras and what they recorded.
struct ApiRoutes: Sendable {
    let recorder: RecorderService.Opened
    let time: APITime
    /// The whole site (`[cluster]`): the other nodes' cameras and recordings; nil: this node alone.
    var site: (any SiteCatalog)? = nil
    /// Reads of the index and the disk (SQLite and files block): never on the cooperative pool,
    /// as many at once as the index keeps read connections.
    static let io = BlockingIO("vigil.http", width: RecordingIndex.idleReaders)
    /// Reads of the cluster's catalogue (`[cluster]`), which wait up to `SiteView.deadline` for
    /// PostgreSQL: on threads of their own, so a slow database never delays this node's files.
    static let siteIO = BlockingIO("vigil.http.site", width: 2)
    /// Writes to the index (the reviewed flag): one lane, so two marks of one event land in the
    /// order they came.
    static let writeIO = BlockingIO("vigil.http.write")
    private static let logger = Logger(label: "vigil.http")

    /// `work` on the index, on the I/O lanes. An index that cannot be read is a 500 and a log
    /// line, never a 404 or an empty list: the recordings may well be there.
    static func reading<T: Sendable>(_ index: RecordingIndex, _ work: @escaping @Sendable (RecordingIndex) throws -> T) async throws(APIError) -> T {
        try await using(index, on: io, failing: "read", work)
    }

    /// `work` that writes to the index (the reviewed flag), the same way; its failure says so.
    static func writing<T: Sendable>(_ index: RecordingIndex, _ work: @escaping @Sendable (RecordingIndex) throws -> T) async throws(APIError) -> T {
        try await using(index, on: writeIO, failing: "written", work)
    }

    private static func using<T: Sendable>(
        _ index: RecordingIndex, on lanes: BlockingIO, failing verb: String, _ work: @escaping @Sendable (RecordingIndex) throws -> T
    ) async throws(APIError) -> T {
        switch await lanes.run({ Result { try work(index) } }) {
        case .success(let value): return value
        case .failure(let error):
            logger.error("the recordings index cannot be \(verb): \(error)")
            throw APIError(.internalServerError, "the recordings index cannot be \(verb) (the recorder's log says why)")
        }
    }

    func add(to router: Router<WebRequestContext>) {
        router.get("/healthz") { _, _ in JSONBody.response(["status": "ok"]) }
        router.get("/api/v1/cameras") { _, _ in
            JSONBody.response(["cameras": try await cameras()])
        }
        router.get("/api/v1/cameras/:name/recordings") { request, context in
            let name = try await camera(context)
            let range = try time.range(request)
            return JSONBody.response(try await recordings(name, range))
        }
        router.get("/api/v1/cameras/:name/stills") { request, context in
            let name = try await camera(context)
            let range = try time.range(request)
            return JSONBody.response(try await stills(name, range))
        }
        router.get("/api/v1/cameras/:name/events") { request, context in
            let name = try await camera(context)
            let range = try time.range(request)
            return JSONBody.response(try await events(name, range))
        }
    }

    /// What can be played or shown: not a file being written, gone or quarantined.
    static let servedStates: [RecordingIndex.State] = [.complete, .recovered, .interrupted]

    struct RecordingsJSON: Encodable {
        struct Recording: Encodable {
            let id: Int64
            let start, end: String
            let bytes: Int64
            let container: String
            let url: String
            /// Here, in the archive's bucket only, or both (`RecordingIndex.Location`); another
            /// node's recording is "local" to that node.
            let location: String
            /// `[cluster]`: the node whose disk holds it.
            var node: String? = nil
        }
        struct Gap: Encodable {
            let start, end: String
            /// `[cluster]`: the gap begins at a file this node was still writing when the camera
            /// moved on (it was killed, or cut off): that file's real end is known only when the
            /// node returns and finishes it, so the gap may be shorter than listed.
            var unknown_until_node: String? = nil
        }
        let camera, from, to: String
        let recordings: [Recording]
        let gaps: [Gap]
        /// `[cluster]`: true when the cluster's catalogue did not answer, so only this node's
        /// recordings are listed (and gaps may be another node's footage).
        var partial: Bool? = nil
    }

    /// A camera's segments: this node's from its index; with `[cluster]`, the other nodes' from
    /// the shared catalogue too, each with its node, and the gaps of the whole site.
    func recordings(_ camera: String, _ range: (from: Int64, to: Int64)) async throws(APIError) -> RecordingsJSON {
        let zone = time.timeZone
        let local = try await Self.reading(recorder.index) {
            try RecordingsListing(index: $0, camera: camera, kind: .segment, from: range.from, to: range.to, timeZone: zone)
        }
        let here = site?.node
        var listed = local.entries.map { (node: here, entry: $0, url: "/api/v1/recordings/\($0.id)/file") }
        var partial: Bool?
        if let site {
            // This node's own rows come from its index, which is never behind the catalogue.
            switch await Self.siteIO.run({ Result { try site.recordings(camera: camera, kinds: [.segment], from: range.from, to: range.to) } }) {
            case .success(let rows):
                listed += rows.filter { $0.node != site.node }.map { (node: $0.node, entry: $0.entry, url: "/api/v1/cluster/recordings/\($0.entry.id)/file") }
                listed.sort { ($0.entry.startNanos, $0.entry.path) < ($1.entry.startNanos, $1.entry.path) }
                partial = false
            case .failure(let error):
                Self.logger.debug("the cluster's catalogue did not answer a listing: \(error)")
                partial = true
            }
        }
        let recordings = listed.filter { $0.entry.kind == .segment && Self.servedStates.contains($0.entry.state) }.map { r in
            RecordingsJSON.Recording(
                id: r.entry.id, start: time.string(r.entry.startNanos), end: time.string(r.entry.endNanos), bytes: r.entry.bytes,
                container: (r.entry.path as NSString).pathExtension.lowercased() == "mkv" ? "mkv" : "mp4", url: r.url,
                location: r.entry.location.rawValue, node: r.node)
        }
        let gaps = RecordingsListing(entries: listed.map(\.entry), timeZone: zone).gaps
        return RecordingsJSON(
            camera: camera, from: time.string(range.from), to: time.string(range.to), recordings: recordings,
            gaps: zip(gaps, Self.unfinished(before: gaps, in: listed)).map { gap, node in
                RecordingsJSON.Gap(start: time.string(gap.from), end: time.string(gap.to), unknown_until_node: node)
            },
            partial: partial)
    }

    /// For each gap of one camera's listing: the node whose file, still being written by the
    /// catalogue's account, the gap begins at, when the footage after the gap is another node's
    /// (the camera moved on without that file being finished: the node was killed or cut off);
    /// nil for a gap in the footage. One pass over the listing, then one look per gap.
    static func unfinished(before gaps: [(camera: String, from: Int64, to: Int64)], in listed: [(node: String?, entry: RecordingIndex.Entry, url: String)]) -> [String?] {
        var writingEndingAt: [Int64: String] = [:]
        var nodeStartingAt: [Int64: String?] = [:]
        for item in listed where item.entry.kind == .segment {
            if item.entry.state == .writing, let node = item.node { writingEndingAt[item.entry.endNanos] = node }
            if nodeStartingAt[item.entry.startNanos] == nil { nodeStartingAt[item.entry.startNanos] = item.node }
        }
        return gaps.map { gap in
            guard let node = writingEndingAt[gap.from], let next = nodeStartingAt[gap.to], next != node else { return nil }
            return node
        }
    }

    struct StillsJSON: Encodable {
        struct Still: Encodable {
            let id: Int64
            let time: String
            let url: String
        }
        let camera: String
        let stills: [Still]
    }

    func stills(_ camera: String, _ range: (from: Int64, to: Int64)) async throws(APIError) -> StillsJSON {
        let entries = try await Self.reading(recorder.index) {
            try $0.entries(camera: camera, kinds: [.still, .snapshot], from: range.from, to: range.to, states: Self.servedStates)
        }
        return StillsJSON(camera: camera, stills: entries.map {
            StillsJSON.Still(id: $0.id, time: time.string($0.startNanos), url: "/api/v1/stills/\($0.id)")
        })
    }

    struct EventsJSON: Encodable {
        let camera: String
        let events: [EventJSON]
        /// `[cluster]`: false when every node's events are listed, true when the catalogue did
        /// not answer and this node's alone are; left out without a cluster.
        var partial: Bool? = nil
    }

    /// The most events a camera's range lists from the site's catalogue (a day of an event a
    /// minute is 1,440).
    static let maxRangeEvents = 20_000

    /// Motion events that overlap the range, oldest first (none for a camera without
    /// `[[motion]]`): with `[cluster]` every node's, from the catalogue, so a camera that moved
    /// or that another node records shows all its events; this node's when it does not answer.
    func events(_ camera: String, _ range: (from: Int64, to: Int64)) async throws(APIError) -> EventsJSON {
        if let site, case .success(let listed) = await Self.siteIO.run({
            Result {
                try site.events(camera: camera, from: range.from, to: range.to, unreviewedOnly: false, before: nil, limit: Self.maxRangeEvents + 1)
            }
        }) {
            guard listed.count <= Self.maxRangeEvents else {
                throw APIError(.badRequest, "\(camera) has more than \(Self.maxRangeEvents) motion events in that range: ask a shorter one")
            }
            return EventsJSON(camera: camera, events: try await eventsJSON(listed.reversed()), partial: false)
        }
        let events = try await Self.reading(recorder.index) { try $0.motionEvents(camera: camera, from: range.from, to: range.to) }
        return EventsJSON(camera: camera, events: events.map(eventJSON), partial: site == nil ? nil : true)
    }

    /// The `:name` of the path: a camera the recorder runs or has recordings of, or 404.
    func camera(_ context: WebRequestContext) async throws(APIError) -> String {
        let name = try RequestValues.cameraName(context)
        try await requireCamera(name)
        return name
    }

    /// A monotonic instant as a time of day, past (`since`) or to come (`next_attempt`).
    static func wallNanos(ofMonotonic monotonic: Int64, now: Int64, wallNow: Int64) -> Int64 {
        wallNow &+ (monotonic &- now)
    }

    func cameras() async throws(APIError) -> [CameraJSON] {
        // The segments being written now, from the index (it has them from their first frame).
        let writing = try await Self.reading(recorder.index) {
            Dictionary(try $0.entries(kind: .segment, states: [.writing]).map { ($0.camera, $0.startNanos) }) { _, last in last }
        }
        let now = SystemClocks.monotonicNanos(), wallNow = SystemClocks.wallNanos()
        func wall(_ monotonic: Int64) -> String { time.string(Self.wallNanos(ofMonotonic: monotonic, now: now, wallNow: wallNow)) }
        let here = await recorder.supervisor.status().map { s in
            let name = s.cameraID
            let base = "/api/v1/cameras/\(Self.pathComponent(name))"
            let h264 = s.recordedCodec == "h264" || s.format?.pixelFormat == .h264
            let down = s.state == .reconnecting || s.state == .waiting
            return CameraJSON(
                name: name, state: s.state.rawValue, reason: down ? s.lastProblem : nil,
                since: down ? s.lostSinceMonotonicNanos.map(wall) : nil,
                nextAttempt: down ? s.nextAttemptMonotonicNanos.map { wall(max($0, now)) } : nil,
                fps: s.frameRate, frames: s.frames, dropped: s.droppedFrames,
                lastFrameAgeSeconds: s.lastFrameMonotonicNanos.map { Double(max(0, now - $0)) / 1e9 },
                codec: s.recordedCodec, width: s.frameSize?.width ?? s.format?.width, height: s.frameSize?.height ?? s.format?.height,
                currentSegment: writing[name].map { CameraJSON.Segment(start: time.string($0)) },
                kind: kind(of: name).rawValue, snapshot: base + "/snapshot.jpg", liveMjpeg: base + "/live.mjpeg",
                liveMp4: h264 ? base + "/live" : nil, node: site?.node)
        }
        return here + (await elsewhere(besides: Set(here.map(\.name))))
    }

    /// `[cluster]`: the cameras other live nodes record, each with its node; its picture, and the
    /// live view of one recorded as H.264 there, come through this node (`ClusterRoutes`). None
    /// when the catalogue does not answer.
    private func elsewhere(besides here: Set<String>) async -> [CameraJSON] {
        guard let site, case .success(let held) = await Self.siteIO.run({ Result { try site.heldCameras() } }) else { return [] }
        var seen = here
        return held.filter { $0.node != site.node && seen.insert($0.camera).inserted }.map { camera in
            let base = "/api/v1/cluster/cameras/\(Self.pathComponent(camera.camera))"
            return CameraJSON(
                name: camera.camera, state: "elsewhere", reason: nil, since: nil, nextAttempt: nil, fps: 0, frames: 0, dropped: 0, lastFrameAgeSeconds: nil,
                codec: camera.codec, width: nil, height: nil, currentSegment: nil, kind: kind(of: camera.camera).rawValue,
                snapshot: base + "/snapshot.jpg", liveMjpeg: nil, liveMp4: camera.codec == "h264" ? base + "/live" : nil, node: camera.node)
        }
    }

    /// The camera by its name, or 404.
    func requireCamera(_ name: String) async throws(APIError) {
        let known = await recorder.supervisor.status().contains { $0.cameraID == name }
        if known { return }
        if let site, case .success(let held) = await Self.siteIO.run({ Result { try site.heldCameras() } }), held.contains(where: { $0.camera == name }) {
            return
        }
        let recorded = try await Self.reading(recorder.index) { try $0.cameras() }
        guard recorded.contains(name) else { throw .unknownCamera(name) }
    }

    enum Kind: String { case usb, network, synthetic }

    private func kind(of name: String) -> Kind {
        switch recorder.configuration.cameras.first(where: { $0.name == name })?.match {
        case .url: return .network
        case .id(let id) where id.hasPrefix("synthetic-"): return .synthetic
        case .some: return .usb
        case nil: return name.hasPrefix("synthetic-") ? .synthetic : .usb
        }
    }

    /// A camera name inside a URL path (discovered cameras are named by device ids, which may hold ":").
    static func pathComponent(_ name: String) -> String {
        var allowed = CharacterSet.urlPathAllowed
        allowed.remove(charactersIn: "/")
        return name.addingPercentEncoding(withAllowedCharacters: allowed) ?? name
    }
}

/// One camera in `GET /api/v1/cameras`; nil values are written as null (the page tests for them).
struct CameraJSON: Encodable {
    struct Segment: Encodable { let start: String }
    let name: String
    let state: String
    /// Reconnecting or waiting: why (the last error), since when it was lost, when it is tried next.
    let reason: String?
    let since: String?
    let nextAttempt: String?
    let fps: Double
    let frames: Int
    let dropped: Int
    let lastFrameAgeSeconds: Double?
    let codec: String?
    let width: Int?
    let height: Int?
    let currentSegment: Segment?
    let kind: String
    let snapshot: String
    /// nil for a camera another node records (its picture is the snapshot, through this node).
    let liveMjpeg: String?
    let liveMp4: String?
    /// `[cluster]`: the node that records it (null for a recorder alone).
    let node: String?

    enum CodingKeys: String, CodingKey {
        case name, state, reason, since, nextAttempt, fps, frames, dropped, lastFrameAgeSeconds, codec, width, height, currentSegment, kind, snapshot, liveMjpeg, liveMp4, node
    }

    func encode(to encoder: any Encoder) throws {
        var c = encoder.container(keyedBy: CodingKeys.self)
        try c.encode(name, forKey: .name)
        try c.encode(state, forKey: .state)
        try c.encode(reason, forKey: .reason)
        try c.encode(since, forKey: .since)
        try c.encode(nextAttempt, forKey: .nextAttempt)
        try c.encode(fps, forKey: .fps)
        try c.encode(frames, forKey: .frames)
        try c.encode(dropped, forKey: .dropped)
        try c.encode(lastFrameAgeSeconds, forKey: .lastFrameAgeSeconds)
        try c.encode(codec, forKey: .codec)
        try c.encode(width, forKey: .width)
        try c.encode(height, forKey: .height)
        try c.encode(currentSegment, forKey: .currentSegment)
        try c.encode(kind, forKey: .kind)
        try c.encode(snapshot, forKey: .snapshot)
        try c.encode(liveMjpeg, forKey: .liveMjpeg)
        try c.encode(liveMp4, forKey: .liveMp4)
        try c.encode(node, forKey: .node)
    }
}
