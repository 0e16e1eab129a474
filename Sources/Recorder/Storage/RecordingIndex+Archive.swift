internal import CSQLite

/// The archive's durable queue (`[archive]`): one row per file to copy to the bucket, from
/// `queued` through `uploading` (with its multipart upload and the parts the bucket confirmed)
/// to `archived`. Rows survive kill -9 with the index, so an upload resumes where it stopped.
/// A separate table keyed by path covers recordings and event pictures alike.
extension RecordingIndex {
    public enum ArchiveState: String, Sendable {
        case queued, uploading, archived
    }

    /// Where a file's bytes are: here, in the bucket, or both.
    public enum Location: String, Sendable {
        case local, archive, both
    }

    /// One file of the archive queue.
    public struct ArchiveItem: Sendable, Equatable {
        /// Relative to the storage root (the bucket's key is the prefix and this).
        public var path: String
        public var state: ArchiveState
        /// Its size when it was queued or last looked at.
        public var bytes: Int64
        /// Hex SHA-256 of the whole file, once an upload began.
        public var sha256: String?
        /// The multipart upload under way; nil for a single PUT.
        public var uploadID: String?
        public var partSize: Int?
        /// False once the local copy was deleted (the bucket then holds the only one).
        public var local: Bool
        public var attempts: Int
        public var lastError: String?
        public var queuedNanos: Int64
        public var archivedNanos: Int64?
    }

    /// A part of a multipart upload the bucket answered 200 for.
    public struct ArchivePart: Sendable, Equatable {
        public var number: Int
        public var bytes: Int64
        public var etag: String
        /// Hex SHA-256 of the part.
        public var sha256: String

        public init(number: Int, bytes: Int64, etag: String, sha256: String) {
            self.number = number
            self.bytes = bytes
            self.etag = etag
            self.sha256 = sha256
        }
    }

    /// Queues a finished file for the archive; one already queued or archived stays as it is.
    public func enqueueForArchive(path: String, bytes: Int64, nowNanos: Int64) throws {
        try run("INSERT OR IGNORE INTO archive (file, upload_state, size, queued_ns) VALUES (?1, 'queued', ?2, ?3)",
                [.text(path), .integer(bytes), .integer(nowNanos)])
    }

    /// Queues every finished recording and event picture not in the queue yet (the first start
    /// with `[archive]`, or after files were adopted); returns how many were added.
    public func enqueueAllForArchive(nowNanos: Int64) throws -> Int {
        try transaction {
            try run("""
                INSERT OR IGNORE INTO archive (file, upload_state, size, queued_ns)
                SELECT path, 'queued', bytes, ?1 FROM recordings WHERE state IN ('complete', 'interrupted', 'recovered')
                """, [.integer(nowNanos)])
            let recordings = try query("SELECT changes()", []) { Int(sqlite3_column_int64($0, 0)) }.first ?? 0
            try run("""
                INSERT OR IGNORE INTO archive (file, upload_state, size, queued_ns)
                SELECT picture, 'queued', 0, ?1 FROM motion_events WHERE picture IS NOT NULL AND end_ns IS NOT NULL
                """, [.integer(nowNanos)])
            let pictures = try query("SELECT changes()", []) { Int(sqlite3_column_int64($0, 0)) }.first ?? 0
            return recordings + pictures
        }
    }

    /// The files still to upload, those already under way first (they resume), then oldest first.
    public func archiveQueue(limit: Int) throws -> [ArchiveItem] {
        try read("SELECT \(Self.archiveColumns) FROM archive WHERE upload_state != 'archived' ORDER BY upload_state = 'uploading' DESC, queued_ns, file LIMIT ?1",
                 [.integer(Int64(limit))], Self.archiveItem)
    }

    /// The first and the last file queued of those still to upload (what a stop leaves behind is
    /// named by them); nil when nothing waits.
    public func archiveQueueEnds() throws -> (oldest: String, newest: String)? {
        let waiting = "SELECT file FROM archive WHERE upload_state != 'archived'"
        guard let oldest = try read("\(waiting) ORDER BY queued_ns, file LIMIT 1", [], { Self.text($0, 0) }).first,
              let newest = try read("\(waiting) ORDER BY queued_ns DESC, file DESC LIMIT 1", [], { Self.text($0, 0) }).first else { return nil }
        return (oldest, newest)
    }

    /// The multipart uploads the queue owns (others under the prefix are orphans to abort).
    public func archiveUploadIDs() throws -> [String] {
        try read("SELECT upload_id FROM archive WHERE upload_state != 'archived' AND upload_id IS NOT NULL", []) { Self.text($0, 0) }
    }

    public func archiveItem(path: String) throws -> ArchiveItem? {
        try read("SELECT \(Self.archiveColumns) FROM archive WHERE file = ?1", [.text(path)], Self.archiveItem).first
    }

    /// Every row (the bench and `vigil archive status`), oldest first.
    public func archiveItems() throws -> [ArchiveItem] {
        try read("SELECT \(Self.archiveColumns) FROM archive ORDER BY queued_ns, file", [], Self.archiveItem)
    }

    /// An upload began: its hash, size and (multipart) upload id are kept so a restart resumes it.
    public func startUpload(path: String, bytes: Int64, sha256: String, uploadID: String?, partSize: Int?) throws {
        try run("UPDATE archive SET upload_state = 'uploading', size = ?2, sha256 = ?3, upload_id = ?4, part_size = ?5 WHERE file = ?1",
                [.text(path), .integer(bytes), .text(sha256), uploadID.map { .text($0) } ?? .null, partSize.map { .integer(Int64($0)) } ?? .null])
    }

    /// A part the bucket confirmed; committed at once, so a kill after it does not send it again.
    public func addArchivePart(path: String, _ part: ArchivePart) throws {
        try run("INSERT OR REPLACE INTO archive_parts (file, part, size, etag, sha256) VALUES (?1, ?2, ?3, ?4, ?5)",
                [.text(path), .integer(Int64(part.number)), .integer(part.bytes), .text(part.etag), .text(part.sha256)])
    }

    public func archiveParts(path: String) throws -> [ArchivePart] {
        try read("SELECT part, size, etag, sha256 FROM archive_parts WHERE file = ?1 ORDER BY part", [.text(path)]) { s in
            ArchivePart(number: Int(sqlite3_column_int64(s, 0)), bytes: sqlite3_column_int64(s, 1), etag: Self.text(s, 2), sha256: Self.text(s, 3))
        }
    }

    /// Starts a file over (its upload was lost or refused): back to `queued`, no parts.
    public func restartUpload(path: String) throws {
        try transaction {
            try run("DELETE FROM archive_parts WHERE file = ?1", [.text(path)])
            try run("UPDATE archive SET upload_state = 'queued', upload_id = NULL, part_size = NULL WHERE file = ?1", [.text(path)])
        }
    }

    /// The bucket holds the file, confirmed by size and checksum.
    public func markArchived(path: String, nowNanos: Int64) throws {
        try transaction {
            try run("DELETE FROM archive_parts WHERE file = ?1", [.text(path)])
            try run("UPDATE archive SET upload_state = 'archived', archived_ns = ?2, upload_id = NULL, last_error = NULL WHERE file = ?1",
                    [.text(path), .integer(nowNanos)])
        }
    }

    public func recordArchiveFailure(path: String, message: String) throws {
        try run("UPDATE archive SET attempts = attempts + 1, last_error = ?2 WHERE file = ?1", [.text(path), .text(String(message.prefix(500)))])
    }

    /// The file leaves the queue (gone from disk before it was uploaded, or deleted from both
    /// places). Its own transaction: not to be called inside another.
    public func removeFromArchive(path: String) throws {
        try transaction {
            try run("DELETE FROM archive_parts WHERE file = ?1", [.text(path)])
            try run("DELETE FROM archive WHERE file = ?1", [.text(path)])
        }
    }

    /// The local copy of an archived file was deleted (or was found gone): the bucket has the only one.
    public func markLocalCopyGone(path: String) throws {
        try run("UPDATE archive SET local = 0 WHERE file = ?1", [.text(path)])
    }

    /// Adds an archived file found in the bucket (`vigil archive rebuild-index`).
    public func putArchived(path: String, bytes: Int64, sha256: String?, local: Bool, nowNanos: Int64) throws {
        try run("""
            INSERT INTO archive (file, upload_state, size, sha256, local, queued_ns, archived_ns) VALUES (?1, 'archived', ?2, ?3, ?4, ?5, ?5)
            ON CONFLICT(file) DO UPDATE SET upload_state = 'archived', size = ?2, sha256 = COALESCE(?3, sha256), local = ?4, archived_ns = ?5
            """, [.text(path), .integer(bytes), sha256.map { .text($0) } ?? .null, .integer(local ? 1 : 0), .integer(nowNanos)])
    }

    /// Files and bytes not archived yet (`vigil_archive_queue_files`, `…_bytes`).
    public func archiveBacklog() throws -> (files: Int, bytes: Int64) {
        try read("SELECT COUNT(*), COALESCE(SUM(size), 0) FROM archive WHERE upload_state != 'archived'", []) { s in
            (Int(sqlite3_column_int64(s, 0)), sqlite3_column_int64(s, 1))
        }.first ?? (0, 0)
    }

    /// Recordings whose local copy may go because the bucket holds them: archived, still here,
    /// ended before `endedBefore` (nil: any), oldest first; `kinds` nil: every kind.
    public func archivedLocalCopies(kinds: [Kind]?, endedBefore: Int64?, limit: Int) throws -> [Entry] {
        var sql = "SELECT \(Self.entryColumns) FROM \(Self.entryTables) WHERE archive.upload_state = 'archived' AND archive.local = 1"
        var values: [SQLiteValue] = []
        if let kinds { sql += " AND recordings.kind IN (" + kinds.map { "'\($0.rawValue)'" }.joined(separator: ",") + ")" }
        if let endedBefore { values.append(.integer(endedBefore)); sql += " AND recordings.end_ns < ?\(values.count)" }
        values.append(.integer(Int64(limit)))
        sql += " ORDER BY recordings.start_ns, recordings.path LIMIT ?\(values.count)"
        return try read(sql, values, Self.entry)
    }

    /// Archived files whose bucket copy is older than `endedBefore` (`max_age_days`), oldest first.
    public func archivedEnding(before endedBefore: Int64, limit: Int) throws -> [Entry] {
        try read("""
            SELECT \(Self.entryColumns) FROM \(Self.entryTables) WHERE archive.upload_state = 'archived' AND recordings.end_ns < ?1
            ORDER BY recordings.start_ns, recordings.path LIMIT ?2
            """, [.integer(endedBefore), .integer(Int64(limit))], Self.entry)
    }

    /// The recording at this path, if the index lists one.
    public func entry(path: String) throws -> Entry? {
        try read("SELECT \(Self.entryColumns) FROM \(Self.entryTables) WHERE recordings.path = ?1", [.text(path)], Self.entry).first
    }

    static let archiveColumns = "file, upload_state, size, sha256, upload_id, part_size, local, attempts, last_error, queued_ns, archived_ns"

    private static func archiveItem(_ s: OpaquePointer) -> ArchiveItem {
        func optionalText(_ column: Int32) -> String? { sqlite3_column_type(s, column) == SQLITE_NULL ? nil : text(s, column) }
        func optionalInteger(_ column: Int32) -> Int64? { sqlite3_column_type(s, column) == SQLITE_NULL ? nil : sqlite3_column_int64(s, column) }
        return ArchiveItem(
            path: text(s, 0), state: ArchiveState(rawValue: text(s, 1)) ?? .queued, bytes: sqlite3_column_int64(s, 2),
            sha256: optionalText(3), uploadID: optionalText(4), partSize: optionalInteger(5).flatMap { Int(exactly: $0) },
            local: sqlite3_column_int64(s, 6) != 0, attempts: Int(truncatingIfNeeded: sqlite3_column_int64(s, 7)),
            lastError: optionalText(8), queuedNanos: sqlite3_column_int64(s, 9), archivedNanos: optionalInteger(10))
    }
}
