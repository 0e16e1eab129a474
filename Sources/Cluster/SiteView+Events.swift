import PostgresNIO
import Recorder

/// Every node's motion events, for the review page of any node: each node's `CatalogReplicator`
/// copies its events into the catalogue, and a person marks them reviewed from any page.
extension SiteView {
    static let eventColumns = PostgresCatalog.motionColumns + ", node"

    public func events(
        camera: String?, from: Int64?, to: Int64?, unreviewedOnly: Bool, before: RecordingIndex.MotionEventCursor?, limit: Int
    ) throws -> [SiteEvent] {
        let query = PostgresCatalog.newestFirst(
            columns: Self.eventColumns, camera: camera, from: from, to: to, unreviewedOnly: unreviewedOnly, before: before,
            limit: min(limit, Self.maxRows))
        return try opened().read("site events", query, Self.siteEvent)
    }

    public func event(id: Int64) throws -> (event: SiteEvent, address: String)? {
        try opened().read("site event", """
            SELECT \(unescaped: Self.eventColumns),
                COALESCE((SELECT url FROM cluster_nodes WHERE cluster_nodes.node = motion_events.node), '')
            FROM motion_events WHERE id = \(id)
            """) { row in
            let (event, address) = try (Self.siteEvent(row), row.makeRandomAccess()[8].decode(String.self))
            guard address.utf8.count <= 2048 else { throw CatalogError.invalidRow("motion event \(id): its node's address is too long") }
            return (event: event, address: address)
        }.first
    }

    public func setEventReviewed(node: String, camera: String, startNanos: Int64, at nanos: Int64?) throws -> SiteEvent? {
        try opened().read("mark a site event", """
            UPDATE motion_events SET reviewed_ns = CASE WHEN \(nanos)::BIGINT IS NULL THEN NULL ELSE COALESCE(reviewed_ns, \(nanos)::BIGINT) END
            WHERE node = \(node) AND camera = \(camera) AND start_ns = \(startNanos)
            RETURNING \(unescaped: Self.eventColumns)
            """, Self.siteEvent).first
    }

    /// A row of `eventColumns` (and perhaps more after), checked.
    static func siteEvent(_ row: PostgresRow) throws -> SiteEvent {
        let c = row.makeRandomAccess()
        guard c.count >= 8 else { throw CatalogError.invalidRow("a motion event row of \(c.count) columns") }
        let node = try c[7].decode(String.self)
        guard NodeName.isValid(node) else { throw CatalogError.invalidRow("motion_events: node \(node.prefix(80))") }
        let event = try PostgresCatalog.motionEvent(
            try c[0].decode(Int64.self), try c[1].decode(String.self), try c[2].decode(Int64.self), try c[3].decode(Int64?.self),
            try c[4].decode(Double.self), try c[5].decode(String?.self), try c[6].decode(Int64?.self))
        return SiteEvent(node: node, event: event)
    }
}
