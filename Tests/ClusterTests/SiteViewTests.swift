import CaptureTesting
@testable import Cluster
import Recorder
import Testing

/// `SiteView.recordings` walks a camera's rows from `from` less its longest recording (schema 8's
/// `recording_spans`): a recording longer than the rest that began before `from` is listed all
/// the same, however its row came to be that long, and `from` near BIGINT's least is no error.
@Suite(.timeLimit(.minutes(2))) struct SiteViewTests {
    private static let io = CatalogBackend.io
    private static let minute: Int64 = 60_000_000_000

    @Test func aRecordingLongerThanTheOthersThatBeganBeforeTheWindowIsListed() async throws {
        // A server of its own: SiteView reads the database's default schema.
        let server = try TestPostgres()
        defer { server.stop() }
        let settings = ClusterSettings(database: try ClusterDatabaseURL(server.url), node: "node-a")
        let catalog = try await Self.io.run { try PostgresCatalog(configuration: settings.clientConfiguration(), node: "node-a") }
        defer { catalog.close() }
        let site = SiteView(settings: settings)
        let minute = Self.minute
        let from = 1_000 * minute
        // Two hours of 1-minute segments ending just before `from`; and a 2-hour segment that began
        // 90 minutes before `from`, indexed first as it started (a minute long, writing), then
        // complete: the longest is raised by the update, not only by a new row.
        let short = (0..<120).map { m in
            segment("m\(m)", start: from - Int64(120 - m) * minute, end: from - Int64(119 - m) * minute - 1)
        }
        let long = segment("long", start: from - 90 * minute, end: from + 30 * minute)
        let started = segment("long", start: long.startNanos, end: long.startNanos + minute, state: .writing)
        try await Self.io.run {
            for entry in short { try catalog.put(entry) }
            try catalog.put(started)
            try catalog.put(long)
            try catalog.put(segment("gate", camera: "gate", start: 0, end: 4 * from))
        }
        @Sendable func listed(from: Int64, to: Int64) async throws -> [String] {
            try await Self.io.run { try site.recordings(camera: "porch", kinds: [.segment], from: from, to: to) }.map(\.entry.path)
        }
        #expect(try await listed(from: from, to: from + 10 * minute) == [long.path])
        #expect(try await listed(from: from - 30 * minute, to: from - 29 * minute) == [long.path, short[90].path, short[91].path])
        let spans = "SELECT camera || ' ' || kind || ' ' || longest_ns FROM recording_spans ORDER BY 1"
        let expected = "gate segment \(4 * from)\nporch segment \(120 * minute)\n"
        #expect(try server.psql(spans) == expected)

        // A removed row leaves the bound as wide as it was, which is still a bound.
        try await Self.io.run { try catalog.remove(path: long.path) }
        #expect(try server.psql(spans) == expected)
        #expect(try await listed(from: from, to: from + 10 * minute) == [])
        try await Self.io.run { try catalog.put(long) }

        // `from − longest` past BIGINT's least is clamped to it, not an error.
        #expect(try await listed(from: .min, to: from - 119 * minute) == [short[0].path, short[1].path])
        #expect(try await Self.io.run { try site.recordings(camera: "porch", kinds: [.timelapse], from: .min, to: .max) }.isEmpty)

        // A database of schema 7 gets the table filled from the rows already there.
        try server.psql("""
            DROP TRIGGER recording_spans_grow ON recordings; DROP FUNCTION recording_spans_grow(); DROP TABLE recording_spans;
            UPDATE vigil_schema SET version = 7
            """)
        try await Self.io.run { try PostgresCatalog(configuration: settings.clientConfiguration(), node: "node-b").close() }
        #expect(try server.psql(spans) == expected)
        #expect(try await listed(from: from, to: from + 10 * minute) == [long.path])
    }
}
