import CaptureTesting
@testable import Cluster
import Plumbing
import PostgresNIO
import Recorder

/// The two back ends of `RecordingCatalog` the contract tests run on: this node's SQLite index
/// in a temporary folder, and the PostgreSQL catalogue in a schema of its own on the test
/// process's shared server.
enum CatalogBackend: String, CaseIterable, Sendable, CustomStringConvertible {
    case sqlite, postgres

    var description: String { rawValue }

    /// Every call goes through here: catalogue methods block their thread, so tests make them
    /// on a Dispatch thread, as Vigil's callers do, never on the cooperative pool.
    static let io = BlockingIO("vigil.test-catalog")

    func open() async throws -> OpenCatalog {
        switch self {
        case .sqlite:
            let dir = try TemporaryDirectory("vigil-catalog")
            let index = try await Self.io.run { try RecordingIndex(root: dir.path) }
            return OpenCatalog(catalog: index) { dir.remove() }
        case .postgres:
            let server = try TestPostgres.shared()
            let schema = try server.freshSchema()
            let catalog = try await Self.io.run { try PostgresCatalog.inSchema(schema, of: server, node: "node-a") }
            return OpenCatalog(catalog: catalog) { catalog.close() }
        }
    }
}

/// A catalogue under test and what removes it.
struct OpenCatalog: Sendable {
    let catalog: any RecordingCatalog
    let remove: @Sendable () -> Void

    /// Runs `body` with the catalogue on the test's Dispatch thread.
    func callAsFunction<T: Sendable>(_ body: @escaping @Sendable (any RecordingCatalog) throws -> T) async throws -> T {
        let catalog = catalog
        return try await CatalogBackend.io.run { try body(catalog) }
    }
}

extension PostgresCatalog {
    /// A catalogue whose tables are in `schema` of the test server (PostgreSQL's `search_path`,
    /// set for each connection when it starts).
    static func inSchema(
        _ schema: String, of server: TestPostgres, node: String, deadline: Duration = .seconds(10), migrating: Bool = true
    ) throws -> PostgresCatalog {
        try PostgresCatalog(configuration: configuration(schema, of: server), node: node, deadline: deadline, migrating: migrating)
    }

    /// The client settings for `schema` of `server`.
    static func configuration(_ schema: String, of server: TestPostgres) throws -> PostgresClient.Configuration {
        var configuration = try ClusterDatabaseURL(server.url).clientConfiguration(password: nil)
        configuration.options.additionalStartupParameters = [("search_path", schema)]
        return configuration
    }
}

/// A segment for the tests: `n` seconds after a fixed start, one second long unless told.
func segment(
    _ name: String, camera: String = "porch", start: Int64, end: Int64? = nil, kind: RecordingIndex.Kind = .segment,
    bytes: Int64 = 1_000, state: RecordingIndex.State = .complete
) -> RecordingIndex.Entry {
    RecordingIndex.Entry(
        kind: kind, camera: camera, path: "\(camera)/video/\(name).mp4", startNanos: start, endNanos: end ?? start + 1_000_000_000,
        frames: 25, bytes: bytes, codec: "h264", width: 160, height: 120, state: state)
}
