internal import CSQLite

/// The journal of changes for the cluster's shared catalogue (`[cluster]`): triggers on
/// `recordings` note the path of every row added, changed or deleted, in the same transaction
/// as the change, so no write can be lost between this node's index and the catalogue, whether
/// the database is away for a second or a day. `CatalogReplicator` writes each noted path's
/// current row (or its absence) to the catalogue, then forgets the notes.
///
/// Only a node of a cluster keeps the journal: a standalone recorder has neither the table nor
/// the triggers, and a node that leaves the cluster drops both.
extension RecordingIndex {
    /// A noted change: the recording at `path` was added, changed or deleted.
    public struct CatalogChange: Sendable, Equatable {
        public let sequence: Int64
        public let path: String
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

    /// Keeps the journal (a node of a cluster) or drops it (standalone). Turned on for the
    /// first time, it notes every recording already indexed, so an install that joins a
    /// cluster brings its history into the catalogue.
    func keepCatalogJournal(_ keep: Bool) throws {
        let exists = try query("SELECT count(*) FROM sqlite_master WHERE type = 'table' AND name = 'catalog_journal'", []) {
            sqlite3_column_int64($0, 0) > 0
        }.first ?? false
        guard keep else {
            if exists {
                try execute("""
                    DROP TRIGGER IF EXISTS catalog_journal_insert; DROP TRIGGER IF EXISTS catalog_journal_update;
                    DROP TRIGGER IF EXISTS catalog_journal_delete; DROP TABLE catalog_journal;
                    """)
            }
            return
        }
        try transaction {
            try execute(Self.catalogJournal)
            if !exists { try execute("INSERT INTO catalog_journal (path) SELECT path FROM recordings ORDER BY id") }
        }
    }

    /// The oldest `limit` changes not yet in the catalogue (none when there is no journal).
    public func catalogChanges(limit: Int) throws -> [CatalogChange] {
        try read("SELECT sequence, path FROM catalog_journal ORDER BY sequence LIMIT ?1", [.integer(Int64(max(1, limit)))]) {
            CatalogChange(sequence: sqlite3_column_int64($0, 0), path: Self.text($0, 1))
        }
    }

    /// How many changes wait for the catalogue.
    public func catalogChangesWaiting() throws -> Int {
        try read("SELECT count(*) FROM catalog_journal", []) { Int(truncatingIfNeeded: sqlite3_column_int64($0, 0)) }.first ?? 0
    }

    /// Forgets the changes up to `sequence`: they are in the catalogue.
    public func forgetCatalogChanges(through sequence: Int64) throws {
        try run("DELETE FROM catalog_journal WHERE sequence <= ?1", [.integer(sequence)])
    }
}
