internal import CSQLite
import Capture
import CheckedMath
import Foundation

/// Listings of the index, each on a read-only connection of its own (see `RecordingIndex`).
extension RecordingIndex {
    /// Entries ordered by start time; nil arguments do not filter. An entry is in [from, to]
    /// when it overlaps that range.
    public func entries(camera: String? = nil, kind: Kind? = nil, from: Int64? = nil, to: Int64? = nil, states: [State]? = nil) throws -> [Entry] {
        try entries(camera: camera, kinds: kind.map { [$0] }, from: from, to: to, states: states)
    }

    /// Entries of any of `kinds` (nil: every kind), ordered by start time.
    public func entries(camera: String? = nil, kinds: [Kind]?, from: Int64? = nil, to: Int64? = nil, states: [State]? = nil) throws -> [Entry] {
        try readTogether { c in
            let longest = from == nil ? [:] : try Self.longestSpans(c, camera: camera)
            let query = Self.entriesQuery(camera: camera, kinds: kinds, from: from, to: to, states: states, longest: longest)
            return try c.rows(query.sql, query.values, Self.entry)
        }
    }

    /// The `entries` statement. An entry overlaps [from, to] when it ends at or after `from` and
    /// starts at or before `to`; `recordings_by_time` (camera, kind, start_ns) bounds only the
    /// second, so alone it walks every row of the camera since its first (525,000 a year of
    /// 1-minute segments, for a day's 1,440). No recording of a kind is longer than
    /// `longest[kind]`, so one that ends at or after `from` starts at or after `from − longest`:
    /// that bound, per kind, gives the walk both ends and leaves the rows as they were. A kind
    /// with no exact bound (none recorded, a length past 64 bits, `from − longest` past 64 bits)
    /// is walked from its first row, as before. Several kinds are one SELECT each, joined by
    /// UNION ALL: SQLite's planner, without statistics, walks the whole camera for an OR of
    /// three kinds' ranges.
    static func entriesQuery(camera: String?, kinds: [Kind]?, from: Int64?, to: Int64?, states: [State]?, longest: [String: Int64]) -> (sql: String, values: [SQLiteValue]) {
        var values: [SQLiteValue] = []
        func parameter(_ value: SQLiteValue) -> String {
            values.append(value)
            return "?\(values.count)"
        }
        func bound(_ kind: String) -> String {
            guard let from, let length = longest[kind], let start = from.subtracting(length) else { return "" }
            return " AND recordings.start_ns >= \(parameter(.integer(start)))"
        }
        var filters = ""
        if let camera { filters += " AND recordings.camera = \(parameter(.text(camera)))" }
        if let from { filters += " AND recordings.end_ns >= \(parameter(.integer(from)))" }
        if let to { filters += " AND recordings.start_ns <= \(parameter(.integer(to)))" }
        if let states { filters += " AND recordings.state IN (" + states.map { "'\($0.rawValue)'" }.joined(separator: ",") + ")" }
        let select = "SELECT \(entryColumns) FROM \(entryTables) WHERE 1"
        guard from != nil, let kinds, !kinds.isEmpty else {
            let kindFilter = kinds.map { " AND recordings.kind IN (" + $0.map { "'\($0.rawValue)'" }.joined(separator: ",") + ")" } ?? bound(anyKind)
            return (select + kindFilter + filters + " ORDER BY recordings.start_ns, recordings.path", values)
        }
        var seen = Set<Kind>()
        let parts = kinds.filter { seen.insert($0).inserted }.map { select + " AND recordings.kind = '\($0.rawValue)'" + bound($0.rawValue) + filters }
        // A compound SELECT is ordered by its result columns' names.
        return (parts.joined(separator: " UNION ALL ") + (parts.count == 1 ? " ORDER BY recordings.start_ns, recordings.path" : " ORDER BY start_ns, path"), values)
    }

    /// The key of `longestSpans` that holds the longest recording of any kind.
    static let anyKind = "*"

    /// The longest recording of each kind of `camera` (nil: of any camera), from
    /// `recording_spans`, and under `anyKind` the longest of all; only exact lengths are given,
    /// so a kind missing here has no bound.
    static func longestSpans(_ c: SQLiteConnection, camera: String?) throws -> [String: Int64] {
        let rows = try c.rows(
            "SELECT kind, MAX(longest_ns) FROM recording_spans WHERE ?1 IS NULL OR camera = ?1 GROUP BY kind",
            [camera.map { .text($0) } ?? .null]
        ) { s in
            (text(s, 0), sqlite3_column_type(s, 1) == SQLITE_INTEGER ? sqlite3_column_int64(s, 1) : nil)
        }
        var longest: [String: Int64] = [:]
        for case let (kind, length?) in rows { longest[kind] = length }
        if longest.count == rows.count, let most = longest.values.max() { longest[anyKind] = most }
        return longest
    }

    /// The entry with this id (`Entry.id`), if there is one.
    public func entry(id: Int64) throws -> Entry? {
        try read("SELECT \(Self.entryColumns) FROM \(Self.entryTables) WHERE recordings.id = ?1", [.integer(id)], Self.entry).first
    }

    /// A recording and, when the archive has it, its archive row (for `Entry.location`).
    static let entryTables = "recordings LEFT JOIN archive ON archive.file = recordings.path"
    static let entryColumns = """
        recordings.kind, recordings.camera, recordings.path, recordings.start_ns, recordings.end_ns, recordings.frames,
        recordings.bytes, recordings.codec, recordings.width, recordings.height, recordings.state, recordings.id,
        archive.upload_state = 'archived', COALESCE(archive.local, 1)
        """

    static func entry(_ s: OpaquePointer) -> Entry {
        var entry = Entry(
            kind: Kind(rawValue: Self.text(s, 0)) ?? .segment, camera: Self.text(s, 1), path: Self.text(s, 2),
            startNanos: sqlite3_column_int64(s, 3), endNanos: sqlite3_column_int64(s, 4), frames: Int(sqlite3_column_int64(s, 5)),
            bytes: sqlite3_column_int64(s, 6), codec: Self.text(s, 7), width: Int(sqlite3_column_int64(s, 8)),
            height: Int(sqlite3_column_int64(s, 9)), state: State(rawValue: Self.text(s, 10)) ?? .missing)
        entry.id = sqlite3_column_int64(s, 11)
        if sqlite3_column_int64(s, 12) != 0 { entry.location = sqlite3_column_int64(s, 13) != 0 ? .both : .archive }
        return entry
    }

    /// Every camera in the index.
    public func cameras() throws -> [String] {
        try read("SELECT DISTINCT camera FROM recordings ORDER BY camera", []) { Self.text($0, 0) }
    }

    /// Bytes of recordings that ended after `sinceNanos`, and the earliest start among them.
    public func bytesRecorded(sinceNanos: Int64) throws -> (bytes: Int64, firstStart: Int64?) {
        try read("SELECT COALESCE(SUM(bytes), 0), MIN(start_ns) FROM recordings WHERE end_ns >= ?1 AND state NOT IN ('missing', 'quarantined')", [.integer(sinceNanos)]) { s in
            (sqlite3_column_int64(s, 0), sqlite3_column_type(s, 1) == SQLITE_NULL ? nil : sqlite3_column_int64(s, 1))
        }.first ?? (0, nil)
    }

    /// The end of the newest recording (of `camera`, or any) that is, or is being, recorded (not missing or quarantined).
    func newestEnd(camera: String? = nil) throws -> Int64? {
        try read("SELECT MAX(end_ns) FROM recordings WHERE state NOT IN ('missing', 'quarantined')" + (camera == nil ? "" : " AND camera = ?1"), camera.map { [.text($0)] } ?? []) { s in
            sqlite3_column_type(s, 0) == SQLITE_NULL ? nil : sqlite3_column_int64(s, 0)
        }.first ?? nil
    }
}
