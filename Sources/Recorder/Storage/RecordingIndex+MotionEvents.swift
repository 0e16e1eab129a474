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
        /// The picture of peak motion, relative to the root (nil until the event ends, or if none was saved).
        public var picture: String?
    }

    /// An event began (`motion_start`): listed at once, with no end yet.
    public func startMotionEvent(camera: String, startNanos: Int64) throws {
        try run("INSERT INTO motion_events (camera, start_ns) VALUES (?1, ?2) ON CONFLICT(camera, start_ns) DO NOTHING",
                [.text(camera), .integer(startNanos)])
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
        var sql = "SELECT \(Self.motionColumns) FROM motion_events WHERE 1"
        var values: [SQLiteValue] = []
        if let camera { values.append(.text(camera)); sql += " AND camera = ?\(values.count)" }
        if let from { values.append(.integer(from)); sql += " AND (end_ns IS NULL OR end_ns >= ?\(values.count))" }
        if let to { values.append(.integer(to)); sql += " AND start_ns <= ?\(values.count)" }
        sql += " ORDER BY start_ns, id"
        return try read(sql, values, Self.motionEvent)
    }

    /// The event with this id.
    public func motionEvent(id: Int64) throws -> MotionEvent? {
        try read("SELECT \(Self.motionColumns) FROM motion_events WHERE id = ?1", [.integer(id)], Self.motionEvent).first
    }

    private static let motionColumns = "id, camera, start_ns, end_ns, peak_percent, picture"

    private static func motionEvent(_ s: OpaquePointer) -> MotionEvent {
        MotionEvent(
            id: sqlite3_column_int64(s, 0), camera: text(s, 1), startNanos: sqlite3_column_int64(s, 2),
            endNanos: sqlite3_column_type(s, 3) == SQLITE_NULL ? nil : sqlite3_column_int64(s, 3),
            peakPercent: sqlite3_column_double(s, 4), picture: sqlite3_column_type(s, 5) == SQLITE_NULL ? nil : text(s, 5))
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
