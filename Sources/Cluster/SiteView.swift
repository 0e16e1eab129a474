import Logging
import PostgresNIO
import Recorder
import Synchronization

/// The site as a node's page and API show it (`SiteCatalog`): every node's recordings and who
/// records each camera, read from the shared catalogue. The catalogue is opened on first use
/// and again after it failed to open, so a node that started while the database was away shows
/// the site once it answers; meanwhile each read throws and the page shows this node alone.
public final class SiteView: SiteCatalog {
    public let node: String
    private let settings: ClusterSettings
    private let catalog = Mutex<PostgresCatalog?>(nil)
    private let contact: DatabaseContact
    /// A read waits at most this long: a page that lists only this node is better than no page.
    static let deadline = Duration.seconds(2)

    /// `contact`: when this node's `ClusterService` last reached the database (what peers ask).
    public init(settings: ClusterSettings, contact: DatabaseContact = DatabaseContact()) {
        self.settings = settings
        self.contact = contact
        node = settings.node
    }

    public var databaseContact: (reachedSecondsAgo: Double?, connectedForSeconds: Double?) {
        (contact.reachedSecondsAgo, contact.connectedForSeconds)
    }

    /// The catalogue, opened on first use. Opening waits for the database (up to `deadline`),
    /// so it happens outside the lock: reads that find it open never wait behind one that
    /// connects. Two opened at once: the first stored is kept, the other closed.
    func opened() throws -> PostgresCatalog {
        if let open = catalog.withLock({ $0 }) { return open }
        // A page does not wait for a migration (the node's ClusterService runs it): until it
        // is done, the page shows this node alone.
        let opened = try PostgresCatalog(configuration: settings.clientConfiguration(), node: node, deadline: Self.deadline, migrating: false)
        let kept = catalog.withLock { current in
            if let current { return current }
            current = opened
            return opened
        }
        if kept !== opened { opened.close() }
        return kept
    }

    /// The recordings of `kinds` that overlap [from, to]: they end at or after `from`, and since
    /// none of them is longer than its camera and kind's longest (`recording_spans`, schema 8),
    /// start at or after `from − longest`, which bounds the walk of `recordings_listing` from
    /// below (else it starts at the camera's first row: a year of 1-minute segments for a day).
    /// `from − longest` is worked out in NUMERIC and kept within BIGINT; with no longest known
    /// (no such recording) the bound is BIGINT's least, which bounds nothing.
    public func recordings(camera: String, kinds: [RecordingIndex.Kind], from: Int64, to: Int64) throws -> [SiteRecording] {
        let kinds = kinds.map(\.rawValue)
        return try opened().read("site recordings", """
            SELECT \(unescaped: PostgresCatalog.entryColumns), node FROM recordings
            WHERE camera = \(camera) AND kind = ANY(\(kinds)) AND end_ns >= \(from) AND start_ns <= \(to)
                AND start_ns >= (SELECT GREATEST(\(from)::NUMERIC - MAX(longest_ns), \(Int64.min))::BIGINT
                                 FROM recording_spans WHERE camera = \(camera) AND kind = ANY(\(kinds)))
            ORDER BY start_ns, path COLLATE "C", id LIMIT \(Self.maxRows)
            """, Self.siteRecording)
    }

    public func recording(id: Int64) throws -> (recording: SiteRecording, address: String)? {
        try opened().read("site recording", """
            SELECT \(unescaped: PostgresCatalog.entryColumns), node,
                COALESCE((SELECT url FROM cluster_nodes WHERE cluster_nodes.node = recordings.node), '')
            FROM recordings WHERE id = \(id)
            """) { row in
            let random = row.makeRandomAccess()
            let address = try random[random.count - 1].decode(String.self)
            guard address.utf8.count <= 2048 else { throw CatalogError.invalidRow("recording \(id): its node's address is too long") }
            return (recording: try Self.siteRecording(row), address: address)
        }.first
    }

    public func heldCameras() throws -> [HeldCamera] {
        // The codec of its latest segment there (one being written has none yet; stills are
        // JPEGs whatever the video is) walks recordings_listing backwards from the camera's
        // end, at most a day: a camera just taken, or never opened, has none there.
        try opened().read("held cameras", """
            SELECT held.camera, n.node, n.url,
                (SELECT r.codec FROM recordings r WHERE r.camera = held.camera AND r.node = n.node AND r.kind = 'segment' AND r.codec <> ''
                    AND r.start_ns >= (EXTRACT(EPOCH FROM clock_timestamp()) * 1000000000)::BIGINT - \(Self.codecLookBackNanos)
                    ORDER BY r.start_ns DESC LIMIT 1)
            FROM cluster_nodes n, unnest(n.cameras) AS held(camera)
            WHERE n.heartbeat >= clock_timestamp() - make_interval(secs => \(Double(settings.leaseSeconds)))
            ORDER BY held.camera COLLATE "C", n.node LIMIT \(Self.maxRows)
            """) { row in
            let (camera, node, address, codec) = try row.decode((String, String, String, String?).self)
            guard NodeName.isValid(node), address.utf8.count <= 2048, (codec?.utf8.count ?? 0) <= 32 else {
                throw CatalogError.invalidRow("cluster_nodes: node \(node.prefix(80))")
            }
            return HeldCamera(camera: camera, node: node, address: address, codec: codec)
        }
    }

    /// How far back a held camera's codec is looked for: a day.
    static let codecLookBackNanos: Int64 = 86_400_000_000_000

    /// The most rows one listing reads (a day of one camera is 1,440 one-minute segments).
    static let maxRows = 100_000

    /// A row of `entryColumns` then `node` (and perhaps more columns after).
    static func siteRecording(_ row: PostgresRow) throws -> SiteRecording {
        let c = row.makeRandomAccess()
        guard c.count >= 13 else { throw CatalogError.invalidRow("a recording row of \(c.count) columns") }
        let node = try c[12].decode(String.self)
        guard NodeName.isValid(node) else { throw CatalogError.invalidRow("recordings: node \(node.prefix(80))") }
        let entry = try PostgresCatalog.entry(
            try c[0].decode(String.self), try c[1].decode(String.self), try c[2].decode(String.self), try c[3].decode(Int64.self),
            try c[4].decode(Int64.self), try c[5].decode(Int64.self), try c[6].decode(Int64.self), try c[7].decode(String.self),
            try c[8].decode(Int64.self), try c[9].decode(Int64.self), try c[10].decode(String.self), try c[11].decode(Int64.self))
        return SiteRecording(node: node, entry: entry)
    }
}
