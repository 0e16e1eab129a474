internal import CSQLite

/// The journal of changes for the cluster's shared catalogue (`[cluster]`): triggers on
/// `recordings` note the path of every row added, changed or deleted, and triggers on
/// `motion_events` the camera and start of every event, in the same transaction as the change,
/// so no write can be lost between this node's index and the catalogue, whether the database is
/// away for a second or a day. `CatalogReplicator` writes each noted row as it is now (or its
/// absence) to the catalogue, then forgets the notes.
///
/// Only a node of a cluster keeps the journal: a standalone recorder has neither the table nor
/// the triggers, and a node that leaves the cluster drops both.
extension RecordingIndex {
    /// A noted change: the recording at `path` was added, changed or deleted.
    public struct CatalogChange: Sendable, Equatable {
        public let sequence: Int64
        public let path: String
    }

    /// A noted change of the motion event of `camera` that began at `startNanos`; `marked`: its
    /// review mark was set or cleared here, which the catalogue must then take as it is.
    public struct CatalogEventChange: Sendable, Equatable {
        public let sequence: Int64
        public let camera: String
        public let startNanos: Int64
        public let marked: Bool
    }

    /// The triggers; `UPDATE` notes the old path too, in case a row's path changed.
    private static let catalogJournal = """
        CREATE TABLE IF NOT EXISTS catalog_journal (sequence INTEGER PRIMARY KEY, path TEXT NOT NULL);
        CREATE TRIGGER IF NOT EXISTS catalog_journal_insert AFTER INSERT ON recordings BEGIN
            INSERT INTO catalog_journal (path) VALUES (new.path);
        END;
        CREATE TRIGGER IF NOT EXISTS catalog_journal_update AFTER UPDATE ON recordings BEGIN
            INSERT INTO catalog_journal (path) VALUES (new.path);
            INSERT INTO catalog_journal (path) SELECT old.path WHERE old.path != new.path;
        END;
        CREATE TRIGGER IF NOT EXISTS catalog_journal_delete AFTER DELETE ON recordings BEGIN
            INSERT INTO catalog_journal (path) VALUES (old.path);
        END;
        """

    /// The events' journal: an event is known by (camera, start), which never changes. A change
    /// of its review mark is noted apart (`marked`): the catalogue keeps a mark made on another
    /// node's page when this node writes the event without one, but a mark cleared here must
    /// clear it there, and a write read before the clearing must not bring it back.
    private static let catalogEventJournal = """
        CREATE TABLE IF NOT EXISTS catalog_event_journal (
            sequence INTEGER PRIMARY KEY, camera TEXT NOT NULL, start_ns INTEGER NOT NULL, marked INTEGER NOT NULL DEFAULT 0);
        CREATE TRIGGER IF NOT EXISTS catalog_event_journal_mark AFTER UPDATE OF reviewed_ns ON motion_events
            WHEN old.reviewed_ns IS NOT new.reviewed_ns BEGIN
            INSERT INTO catalog_event_journal (camera, start_ns, marked) VALUES (new.camera, new.start_ns, 1);
        END;
        CREATE TRIGGER IF NOT EXISTS catalog_event_journal_insert AFTER INSERT ON motion_events BEGIN
            INSERT INTO catalog_event_journal (camera, start_ns) VALUES (new.camera, new.start_ns);
        END;
        CREATE TRIGGER IF NOT EXISTS catalog_event_journal_update AFTER UPDATE ON motion_events BEGIN
            INSERT INTO catalog_event_journal (camera, start_ns) VALUES (new.camera, new.start_ns);
        END;
        CREATE TRIGGER IF NOT EXISTS catalog_event_journal_delete AFTER DELETE ON motion_events BEGIN
            INSERT INTO catalog_event_journal (camera, start_ns) VALUES (old.camera, old.start_ns);
        END;
        """

    /// Keeps the journals (a node of a cluster) or drops them (standalone). A journal turned on
    /// for the first time notes every row already indexed, so an install that joins a cluster
    /// brings its history into the catalogue (and a node of a version before the events' journal
    /// brings its events).
    func keepCatalogJournal(_ keep: Bool) throws {
        let recordings = try hasTable("catalog_journal"), events = try hasTable("catalog_event_journal")
        guard keep else {
            if recordings {
                try execute("""
                    DROP TRIGGER IF EXISTS catalog_journal_insert; DROP TRIGGER IF EXISTS catalog_journal_update;
                    DROP TRIGGER IF EXISTS catalog_journal_delete; DROP TABLE catalog_journal;
                    """)
            }
            if events {
                try execute("""
                    DROP TRIGGER IF EXISTS catalog_event_journal_insert; DROP TRIGGER IF EXISTS catalog_event_journal_update;
                    DROP TRIGGER IF EXISTS catalog_event_journal_delete; DROP TRIGGER IF EXISTS catalog_event_journal_mark;
                    DROP TABLE catalog_event_journal;
                    """)
            }
            return
        }
        try transaction {
            try execute(Self.catalogJournal)
            if !recordings { try execute("INSERT INTO catalog_journal (path) SELECT path FROM recordings ORDER BY id") }
            // A journal made before `marked` (a development build) gets the column before its trigger.
            if events, try !query("SELECT count(*) FROM pragma_table_info('catalog_event_journal') WHERE name = 'marked'", [], { sqlite3_column_int64($0, 0) > 0 }).contains(true) {
                try execute("ALTER TABLE catalog_event_journal ADD COLUMN marked INTEGER NOT NULL DEFAULT 0")
            }
            try execute(Self.catalogEventJournal)
            if !events { try execute("INSERT INTO catalog_event_journal (camera, start_ns) SELECT camera, start_ns FROM motion_events ORDER BY id") }
        }
    }

    private func hasTable(_ name: String) throws -> Bool {
        try query("SELECT count(*) FROM sqlite_master WHERE type = 'table' AND name = ?1", [.text(name)]) {
            sqlite3_column_int64($0, 0) > 0
        }.first ?? false
    }

    /// The oldest `limit` changes not yet in the catalogue (none when there is no journal).
    public func catalogChanges(limit: Int) throws -> [CatalogChange] {
        try read("SELECT sequence, path FROM catalog_journal ORDER BY sequence LIMIT ?1", [.integer(Int64(max(1, limit)))]) {
            CatalogChange(sequence: sqlite3_column_int64($0, 0), path: Self.text($0, 1))
        }
    }

    /// The oldest `limit` changes of motion events not yet in the catalogue.
    public func catalogEventChanges(limit: Int) throws -> [CatalogEventChange] {
        try read("SELECT sequence, camera, start_ns, marked FROM catalog_event_journal ORDER BY sequence LIMIT ?1", [.integer(Int64(max(1, limit)))]) {
            CatalogEventChange(
                sequence: sqlite3_column_int64($0, 0), camera: Self.text($0, 1), startNanos: sqlite3_column_int64($0, 2),
                marked: sqlite3_column_int64($0, 3) != 0)
        }
    }

    /// How many changes (of recordings and of motion events) wait for the catalogue.
    public func catalogChangesWaiting() throws -> Int {
        try read("SELECT (SELECT count(*) FROM catalog_journal) + (SELECT count(*) FROM catalog_event_journal)", []) {
            Int(truncatingIfNeeded: sqlite3_column_int64($0, 0))
        }.first ?? 0
    }

    /// Forgets the changes up to `sequence`: they are in the catalogue.
    public func forgetCatalogChanges(through sequence: Int64) throws {
        try run("DELETE FROM catalog_journal WHERE sequence <= ?1", [.integer(sequence)])
    }

    /// Forgets the changes of motion events up to `sequence`: they are in the catalogue.
    public func forgetCatalogEventChanges(through sequence: Int64) throws {
        try run("DELETE FROM catalog_event_journal WHERE sequence <= ?1", [.integer(sequence)])
    }
}
