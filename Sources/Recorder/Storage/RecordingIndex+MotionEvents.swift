internal import CSQLite

/// Motion events: one row per event, listed while it is under way and completed when it ends.
extension RecordingIndex {
    /// A motion event as the index keeps it.
    public struct MotionEvent: Sendable, Equatable {
        public var id: Int64
        public var camera: String
        public var startNanos: Int64
        /// nil while the event is under way.
        public var endNanos: Int64?
        public var peakPercent: Double
        /// The picture of peak motion so far, relative to the root (nil until the first is saved).
        public var picture: String?
        /// When someone marked it reviewed on the page (`WallTime` nanoseconds); nil: not reviewed.
        public var reviewedNanos: Int64?

        /// For other back ends of `RecordingCatalog`, which read events from elsewhere.
        public init(
            id: Int64, camera: String, startNanos: Int64, endNanos: Int64?, peakPercent: Double, picture: String?, reviewedNanos: Int64?
        ) {
            self.id = id
            self.camera = camera
            self.startNanos = startNanos
            self.endNanos = endNanos
            self.peakPercent = peakPercent
            self.picture = picture
            self.reviewedNanos = reviewedNanos
        }
    }

    /// An event began (`motion_start`): listed at once, with no end yet.
    public func startMotionEvent(camera: String, startNanos: Int64) throws {
        try run("INSERT INTO motion_events (camera, start_ns) VALUES (?1, ?2) ON CONFLICT(camera, start_ns) DO NOTHING",
                [.text(camera), .integer(startNanos)])
    }

    /// An event under way grew or has a new picture: its row shows them before it ends. An event
    /// already ended keeps what its end wrote.
    public func updateMotionEvent(camera: String, startNanos: Int64, peakPercent: Double, picture: String?) throws {
        try run("""
            INSERT INTO motion_events (camera, start_ns, peak_percent, picture) VALUES (?1, ?2, ?3, ?4)
            ON CONFLICT(camera, start_ns) DO UPDATE SET peak_percent = ?3, picture = COALESCE(?4, picture) WHERE end_ns IS NULL
            """, [.text(camera), .integer(startNanos), .real(peakPercent), picture.map { .text($0) } ?? .null])
    }

    /// An event ended (`motion_end`): its row gets its end, peak and picture (made if missing).
    public func endMotionEvent(camera: String, startNanos: Int64, endNanos: Int64, peakPercent: Double, picture: String?) throws {
        try run("""
            INSERT INTO motion_events (camera, start_ns, end_ns, peak_percent, picture) VALUES (?1, ?2, ?3, ?4, ?5)
            ON CONFLICT(camera, start_ns) DO UPDATE SET end_ns = ?3, peak_percent = ?4, picture = ?5
            """, [.text(camera), .integer(startNanos), .integer(endNanos), .real(peakPercent), picture.map { .text($0) } ?? .null])
    }

    /// Events that overlap [from, to] (nil: unbounded), oldest first; one under way overlaps
    /// everything after its start.
    public func motionEvents(camera: String? = nil, from: Int64? = nil, to: Int64? = nil) throws -> [MotionEvent] {
        let select = Self.motionEventsSelect(camera: camera, from: from, to: to)
        return try read(select.sql + " ORDER BY start_ns, id", select.values, Self.motionEvent)
    }

    /// The SELECT of the events of `camera` (nil: all) that overlap [from, to] (nil: unbounded),
    /// and its values; callers add their own conditions and order.
    private static func motionEventsSelect(camera: String?, from: Int64?, to: Int64?) -> (sql: String, values: [SQLiteValue]) {
        var sql = "SELECT \(motionColumns) FROM motion_events WHERE 1"
        var values: [SQLiteValue] = []
        if let camera { values.append(.text(camera)); sql += " AND camera = ?\(values.count)" }
        if let from { values.append(.integer(from)); sql += " AND (end_ns IS NULL OR end_ns >= ?\(values.count))" }
        if let to { values.append(.integer(to)); sql += " AND start_ns <= ?\(values.count)" }
        return (sql, values)
    }

    /// The event whose picture is at this path (relative to the root).
    public func motionEvent(picture: String) throws -> MotionEvent? {
        try read("SELECT \(Self.motionColumns) FROM motion_events WHERE picture = ?1", [.text(picture)], Self.motionEvent).first
    }

    /// Adds an event read back from the archive (`vigil archive rebuild-index`); one already listed stays.
    public func restoreMotionEvent(camera: String, startNanos: Int64, endNanos: Int64, peakPercent: Double, picture: String) throws {
        try run("""
            INSERT INTO motion_events (camera, start_ns, end_ns, peak_percent, picture) VALUES (?1, ?2, ?3, ?4, ?5)
            ON CONFLICT(camera, start_ns) DO NOTHING
            """, [.text(camera), .integer(startNanos), .integer(endNanos), .real(peakPercent), .text(picture)])
    }

    /// The event of `camera` that began at `startNanos` (an event's key, the same on every node's
    /// index and in the cluster's catalogue).
    public func motionEvent(camera: String, startNanos: Int64) throws -> MotionEvent? {
        try read("SELECT \(Self.motionColumns) FROM motion_events WHERE camera = ?1 AND start_ns = ?2",
                 [.text(camera), .integer(startNanos)], Self.motionEvent).first
    }

    /// Adds the event of (camera, start) or makes its row say what `event` says; its review
    /// mark as `RecordingCatalog.putMotionEvent` says.
    public func putMotionEvent(_ event: MotionEvent, replacingMark: Bool) throws {
        try run("""
            INSERT INTO motion_events (camera, start_ns, end_ns, peak_percent, picture, reviewed_ns) VALUES (?1, ?2, ?3, ?4, ?5, ?6)
            ON CONFLICT(camera, start_ns) DO UPDATE SET end_ns = ?3, peak_percent = ?4, picture = ?5,
                reviewed_ns = CASE WHEN ?7 THEN ?6 ELSE COALESCE(?6, reviewed_ns) END
            """, [.text(event.camera), .integer(event.startNanos), event.endNanos.map { .integer($0) } ?? .null, .real(event.peakPercent),
                  event.picture.map { .text($0) } ?? .null, event.reviewedNanos.map { .integer($0) } ?? .null, .integer(replacingMark ? 1 : 0)])
    }

    /// Removes the event of `camera` that began at `startNanos`, if there is one.
    public func removeMotionEvent(camera: String, startNanos: Int64) throws {
        try run("DELETE FROM motion_events WHERE camera = ?1 AND start_ns = ?2", [.text(camera), .integer(startNanos)])
    }

    /// The event with this id.
    public func motionEvent(id: Int64) throws -> MotionEvent? {
        try read("SELECT \(Self.motionColumns) FROM motion_events WHERE id = ?1", [.integer(id)], Self.motionEvent).first
    }

    /// Where a page of the review listing goes on from: events older than this one in
    /// (start, id) order, so events that began at the same instant are neither repeated nor skipped.
    public struct MotionEventCursor: Sendable, Equatable {
        public var startNanos: Int64
        public var id: Int64

        public init(startNanos: Int64, id: Int64) {
            self.startNanos = startNanos
            self.id = id
        }

        public init(_ event: MotionEvent) { self.init(startNanos: event.startNanos, id: event.id) }
    }

    /// At most `limit` events across cameras (or of `camera`), newest first, for review: those
    /// that overlap [from, to] (nil: unbounded), only the unreviewed ones if asked, after `before`.
    public func motionEventsNewestFirst(
        camera: String? = nil, from: Int64? = nil, to: Int64? = nil, unreviewedOnly: Bool = false, before: MotionEventCursor? = nil, limit: Int
    ) throws -> [MotionEvent] {
        var (sql, values) = Self.motionEventsSelect(camera: camera, from: from, to: to)
        if unreviewedOnly { sql += " AND reviewed_ns IS NULL" }
        if let before {
            values.append(.integer(before.startNanos))
            values.append(.integer(before.id))
            sql += " AND (start_ns < ?\(values.count - 1) OR (start_ns = ?\(values.count - 1) AND id < ?\(values.count)))"
        }
        values.append(.integer(Int64(max(0, limit))))
        sql += " ORDER BY start_ns DESC, id DESC LIMIT ?\(values.count)"
        return try read(sql, values, Self.motionEvent)
    }

    /// Marks the event reviewed at `nanos` (kept from the first time when it already is), or not
    /// reviewed when `nanos` is nil. False when there is no event with this id.
    public func setMotionEventReviewed(id: Int64, at nanos: Int64?) throws -> Bool {
        try transaction {
            try run("UPDATE motion_events SET reviewed_ns = CASE WHEN ?2 IS NULL THEN NULL ELSE COALESCE(reviewed_ns, ?2) END WHERE id = ?1",
                    [.integer(id), nanos.map { .integer($0) } ?? .null])
            return try query("SELECT changes()", []) { sqlite3_column_int64($0, 0) }.first ?? 0 > 0
        }
    }

    private static let motionColumns = "id, camera, start_ns, end_ns, peak_percent, picture, reviewed_ns"

    private static func motionEvent(_ s: OpaquePointer) -> MotionEvent {
        MotionEvent(
            id: sqlite3_column_int64(s, 0), camera: text(s, 1), startNanos: sqlite3_column_int64(s, 2),
            endNanos: sqlite3_column_type(s, 3) == SQLITE_NULL ? nil : sqlite3_column_int64(s, 3),
            peakPercent: sqlite3_column_double(s, 4), picture: sqlite3_column_type(s, 5) == SQLITE_NULL ? nil : text(s, 5),
            reviewedNanos: sqlite3_column_type(s, 6) == SQLITE_NULL ? nil : sqlite3_column_int64(s, 6))
    }

    /// Events left under way by a crash end where they began (their end is unknown); returns how many.
    func closeUnfinishedMotionEvents() throws -> Int {
        try transaction {
            try run("UPDATE motion_events SET end_ns = start_ns WHERE end_ns IS NULL", [])
            return try query("SELECT changes()", []) { Int(sqlite3_column_int64($0, 0)) }.first ?? 0
        }
    }

    /// Forgets the events of `camera` that ended before `nanos`; returns their pictures (relative).
    func removeMotionEvents(camera: String, endingBefore nanos: Int64) throws -> [String] {
        try transaction {
            let pictures = try query("SELECT picture FROM motion_events WHERE camera = ?1 AND end_ns < ?2 AND picture IS NOT NULL",
                                     [.text(camera), .integer(nanos)]) { Self.text($0, 0) }
            try run("DELETE FROM motion_events WHERE camera = ?1 AND end_ns < ?2", [.text(camera), .integer(nanos)])
            return pictures
        }
    }
}
