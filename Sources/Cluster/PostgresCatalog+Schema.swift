import Logging
import PostgresNIO
import Recorder

/// The catalogue's schema: its version, and the migrations that bring it there.
extension PostgresCatalog {
    /// Brings the schema to `schemaVersion` in one transaction, under an advisory lock so that
    /// nodes starting at once do not create the same tables together (which PostgreSQL refuses
    /// even with IF NOT EXISTS); returns the version found before.
    @discardableResult
    func migrate() throws -> Int32 {
        try wait("migrating the schema", deadline: Self.migrationDeadline) { try await Self.migrate($0) }
    }

    /// How long a migration may take. A step that fills a new table from every recording (step
    /// 8: 24 s on 33.6 M rows) must not be cancelled, and rolled back, by a deadline meant for
    /// one call, or a large catalogue would never reach it. Only a schema found behind gets it.
    public static let migrationDeadline = Duration.seconds(600)

    /// `migrate()` for an async caller with a client of its own (`ClusterService`): reads the
    /// version within `deadline` and, only if the schema is behind, migrates within
    /// `migrationDeadline`. Returns the version found.
    public static func upgrade(_ client: PostgresClient, deadline: Duration) async throws -> Int32 {
        let found = try await withDeadline(deadline, "reading the schema's version") { try await version(client) }
        guard found < schemaVersion else {
            if found > schemaVersion { throw CatalogError.newerSchema(found: found, known: schemaVersion) }
            return found
        }
        return try await withDeadline(migrationDeadline, "bringing the schema to version \(schemaVersion)") { try await migrate(client) }
    }

    /// The schema's version without taking the migration's lock: 0 before the first migration.
    static func version(_ client: PostgresClient) async throws -> Int32 {
        var exists = false
        for try await found in try await client.query("SELECT to_regclass('vigil_schema') IS NOT NULL", logger: logger).decode(Bool.self) {
            exists = found
        }
        guard exists else { return 0 }
        var found: [Int32] = []
        for try await version in try await client.query("SELECT version FROM vigil_schema LIMIT 2", logger: logger).decode(Int32.self) {
            found.append(version)
        }
        guard found.count == 1, let version = found.first, version >= 0 else {
            // Made but not yet filled (a migration under way), or damaged: the migration decides under its lock.
            return found.isEmpty ? 0 : -1
        }
        return version
    }

    /// Brings the schema to `schemaVersion` under the lock (see `migrate()`); returns the version found before.
    static func migrate(_ client: PostgresClient) async throws -> Int32 {
            try await client.withTransaction(logger: Self.logger) { connection in
                try await Self.run("SELECT pg_advisory_xact_lock(\(Self.migrationLock))", on: connection)
                try await Self.run("CREATE TABLE IF NOT EXISTS vigil_schema (version INT NOT NULL)", on: connection)
                var found: [Int32] = []
                for try await version in try await connection.query("SELECT version FROM vigil_schema", logger: Self.logger).decode(Int32.self) {
                    found.append(version)
                }
                guard found.count <= 1, let version = found.first ?? 0 as Int32?, version >= 0 else {
                    throw CatalogError.invalidRow("vigil_schema holds \(found.prefix(3)) instead of one version")
                }
                guard version <= Self.schemaVersion else { throw CatalogError.newerSchema(found: version, known: Self.schemaVersion) }
                for step in Self.migrations.dropFirst(Int(version)) {
                    for statement in step { try await Self.run(PostgresQuery(unsafeSQL: statement), on: connection) }
                }
                if found.isEmpty {
                    try await Self.run("INSERT INTO vigil_schema (version) VALUES (\(Self.schemaVersion))", on: connection)
                } else if version < Self.schemaVersion {
                    try await Self.run("UPDATE vigil_schema SET version = \(Self.schemaVersion)", on: connection)
                }
                return version
            }
    }

    private static func run(_ query: PostgresQuery, on connection: PostgresConnection) async throws {
        for try await _ in try await connection.query(query, logger: logger) {}
    }
}
