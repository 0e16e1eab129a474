import Capture
import CaptureTesting
import Cluster
import Dispatch
import Foundation
import Plumbing
import Recorder
import Synchronization

/// `index-scale --backend postgresql`: the same site in the cluster's catalogue, on a PostgreSQL 15
/// started for the run (`TestPostgres`: a temporary folder under /tmp, fsync,
/// synchronous_commit and full_page_writes off, the rest PostgreSQL's defaults).
///
/// The cameras are shared by `nodes` nodes, as in a cluster (camera n on node n mod 4 + 1).
/// The bulk of the rows goes in by one `INSERT … SELECT generate_series` a day, run by psql on
/// the server, so a year fits in the time; that rate is the fill's, not a cluster's. How a
/// cluster writes, one `PostgresCatalog.put` a row from each node's replicator on its one
/// connection, is timed on a sample of `putSample` rows written after the fill. The listings
/// are `SiteView.recordings`, the query behind a node's API, then `RecordingsListing`'s gaps:
/// first with `recording_spans` empty (the fill's rows skip its trigger: no lower bound on
/// start_ns, as schema 7), then after schema 8's migration run on them (the bound), the same
/// windows, then a month profiled.
struct PostgresIndexScale {
    /// Table and indexes a row, rounded up from the 30-day run, for the free-space check.
    static let bytesPerRowOnDisk = 760
    static let nodes = 4
    static let putSample = 20_000

    let bench: IndexScaleBenchmark

    func node(_ index: Int) -> String { "node\(index + 1)" }

    func run(rows: Int) throws {
        let server = try TestPostgres()
        defer { server.stop() }
        let version = try server.psql("SHOW server_version").trimmingCharacters(in: .whitespacesAndNewlines)
        print("index at scale (postgresql \(version), fsync off): \(bench.cameras) cameras × \(bench.days) days of 1-minute segments on "
            + "\(min(Self.nodes, bench.cameras)) nodes = \(rows) rows, in \(server.directory)")
        let nodes = min(Self.nodes, bench.cameras)
        func settings(_ node: String) throws -> ClusterSettings { ClusterSettings(database: try ClusterDatabaseURL(server.url), node: node) }
        // Each node's replicator has one connection (writes in order); opening the first creates the schema.
        let catalogs = try (0..<nodes).map { n in
            try PostgresCatalog(configuration: settings(node(n)).clientConfiguration(), node: node(n), connections: 1)
        }
        defer { catalogs.forEach { $0.close() } }

        // The fill leaves `recording_spans` empty, so the first listings have no bound: the walk
        // as schema 7's, from the camera's first row.
        try server.psql("ALTER TABLE recordings DISABLE TRIGGER recording_spans_grow")
        let fillSeconds = try bench.writeDays(rows: rows) { day in try server.psql(fillSQL(day: day)) }
        print(String(format: "bulk fill: %.0f rows/s (%ld rows in %.1f s; one INSERT … SELECT generate_series a day, run on the server: not how a cluster writes)",
                     Double(rows) / fillSeconds, rows, fillSeconds))
        // What autovacuum does to a table that grew this much; index-only scans need its visibility map.
        let vacuumSeconds = try seconds { try server.psql("VACUUM ANALYZE recordings") }
        print(String(format: "VACUUM ANALYZE after the fill: %.1f s", vacuumSeconds))
        let sizes = try server.psql(
            "SELECT pg_table_size('recordings'), pg_indexes_size('recordings'), pg_relation_size('recordings_listing')"
        ).split(whereSeparator: { $0 == "|" || $0.isNewline }).compactMap { Int64($0) }
        if sizes.count == 3 {
            print(String(format: "size: table %.1f MB, indexes %.1f MB (recordings_listing %.1f MB): %.0f bytes a row",
                         Double(sizes[0]) / 1e6, Double(sizes[1]) / 1e6, Double(sizes[2]) / 1e6, Double(sizes[0] + sizes[1]) / Double(rows)))
        }

        let site = SiteView(settings: try settings(node(0)))
        let list: IndexScaleBenchmark.Lister = { camera, from, to in
            let rows = try site.recordings(camera: camera, kinds: [.segment], from: from, to: to)
            return RecordingsListing(entries: rows.map(\.entry), timeZone: IndexScaleBenchmark.utc)
        }
        // Before: schema 7's statement, unbounded, through PostgresCatalog.entries (SiteView's
        // less its node column), with time to finish: at a year a listing can pass SiteView's 2 s.
        let unbounded = try PostgresCatalog(configuration: settings(node(0)).clientConfiguration(), node: node(0), deadline: .seconds(120))
        defer { unbounded.close() }
        print("before (schema 7's statement, through PostgresCatalog.entries): the walk starts at the camera's first row")
        try timeListings { camera, from, to in
            let rows = try unbounded.entries(camera: camera, kinds: [.segment], from: from, to: to, states: nil)
            return RecordingsListing(entries: rows, timeZone: IndexScaleBenchmark.utc)
        }

        // Step 8 as a node that starts on a schema 7 database runs it: the table, its trigger,
        // and the longest of every row already there.
        try server.psql("""
            DROP TRIGGER recording_spans_grow ON recordings; DROP FUNCTION recording_spans_grow(); DROP TABLE recording_spans;
            UPDATE vigil_schema SET version = 7
            """)
        let migrateSeconds = try seconds {
            try PostgresCatalog(configuration: settings(node(0)).clientConfiguration(), node: node(0), deadline: .seconds(300)).close()
        }
        print(String(format: "schema 8's migration (recording_spans filled from %ld rows): %.1f s", rows, migrateSeconds))

        let put = try timePuts(catalogs)
        print(String(format: "put, one row a call as CatalogReplicator writes (%ld nodes at once, one connection each, %ld rows on top of the fill, "
            + "schema 8's trigger on each): %.0f rows/s in all, %.0f rows/s a node",
                     nodes, put.rows, Double(put.rows) / put.seconds, Double(put.rows) / put.seconds / Double(nodes)))

        print("after (schema 8, through SiteView.recordings): the walk starts at from − the camera's longest recording")
        try timeListings(list)
        try profileMonth(server, site: site)
    }

    /// `bench.timeListings`, its failure printed (e.g. a listing past its deadline) and the run
    /// carried on.
    private func timeListings(_ list: IndexScaleBenchmark.Lister) throws {
        do {
            try bench.timeListings(list)
        } catch let error as BenchUsageError {
            throw error
        } catch {
            print("  the listings failed: \(error)")
        }
    }

    /// Where a month's listing spends its time: the query on the server (psql's `EXPLAIN
    /// ANALYZE`), the same rows fetched by psql (libpq, text, its own `\timing`, output thrown
    /// away), through `SiteView.recordings` (postgres-nio, each row decoded and checked), and
    /// `RecordingsListing` built from them. Also the query with the bound given as a value, as
    /// a second query would give it (the planner then knows how many rows to expect). One month
    /// in the middle of the run, each measure the median of `samples`.
    func profileMonth(_ server: TestPostgres, site: SiteView, samples: Int = 7) throws {
        let days = min(30, bench.days)
        let camera = bench.camera(bench.cameras / 2)
        let from = IndexScaleBenchmark.first + Int64((bench.days - days) / 2) * IndexScaleBenchmark.dayNanos
        let to = from + Int64(days) * IndexScaleBenchmark.dayNanos - 1
        let bound = "(SELECT GREATEST(\(from)::NUMERIC - MAX(longest_ns), \(Int64.min))::BIGINT FROM recording_spans WHERE camera = '\(camera)' AND kind = ANY('{segment}'))"
        let longest = try server.psql("SELECT \(bound)").trimmingCharacters(in: .whitespacesAndNewlines)
        // SiteView.recordings' statement, with its values written in.
        func query(_ bound: String) -> String {
            """
            SELECT kind, camera, path, start_ns, end_ns, frames, bytes, codec, width, height, state, id, node FROM recordings
            WHERE camera = '\(camera)' AND kind = ANY('{segment}') AND end_ns >= \(from) AND start_ns <= \(to) AND start_ns >= \(bound)
            ORDER BY start_ns, path COLLATE "C", id LIMIT 100000
            """
        }
        func median(_ measure: () throws -> Double) rethrows -> Double {
            var values: [Double] = []
            for _ in 0..<samples { values.append(try measure()) }
            return values.sorted()[values.count / 2]
        }
        /// The milliseconds psql's `\timing` gives `sql`, run with its rows thrown away.
        func psqlTiming(_ sql: String) throws -> Double {
            let result = RecordingInspector.run(TestPostgres.binaries + "/psql", [
                "-h", "127.0.0.1", "-p", "\(server.port)", "-U", server.user, "-d", "postgres", "-X", "-q", "-o", "/dev/null",
                "-c", "\\timing on", "-c", sql,
            ])
            guard result.status == 0, let line = result.output.split(separator: "\n").last(where: { $0.hasPrefix("Time: ") }),
                  let ms = Double(line.split(separator: " ")[1]) else {
                throw BenchUsageError("psql gave no time: \(result.output.suffix(200)) \(result.errorOutput.suffix(200))")
            }
            return ms
        }
        print("a month of \(camera) (\(days) days) in profile")
        for (what, sql) in [("the bound as a sub-select (SiteView.recordings)", query(bound)), ("the bound given as a value, \(longest)", query(longest))] {
            let plan = try server.psql("EXPLAIN (ANALYZE, BUFFERS) " + sql)
            print("  \(what), the plan of one run:")
            for line in plan.split(separator: "\n") { print("    " + line) }
            let onServer = try median { try psqlTiming("EXPLAIN (ANALYZE, TIMING OFF) " + sql) }
            let fetched = try median { try psqlTiming(sql) }
            print(String(format: "  medians of %ld: EXPLAIN ANALYZE (timing off) %.1f ms as psql times it; the rows fetched by psql %.1f ms", samples, onServer, fetched))
        }
        var listed: [SiteRecording] = []
        let nio = try median { try milliseconds { listed = try site.recordings(camera: camera, kinds: [.segment], from: from, to: to) } }
        let build = median { milliseconds { _ = RecordingsListing(entries: listed.map(\.entry), timeZone: IndexScaleBenchmark.utc).gaps } }
        print(String(format: "  medians of %ld: through SiteView.recordings (postgres-nio, each row decoded and checked) %.1f ms for %ld rows; "
            + "RecordingsListing and its gaps %.1f ms", samples, nio, listed.count, build))
    }

    private func milliseconds(_ work: () throws -> Void) rethrows -> Double {
        let t0 = SystemClocks.monotonicNanos()
        try work()
        return Double(SystemClocks.monotonicNanos() - t0) / 1e6
    }

    /// One day of every camera's segments, each on its camera's node, in time order as the
    /// cameras write them; the same rows as `IndexScaleBenchmark.segment` (checked by the listings).
    func fillSQL(day: Int) -> String {
        let today = IndexScaleBenchmark.Day(day)
        return """
            INSERT INTO recordings (node, kind, camera, path, start_ns, end_ns, frames, bytes, codec, width, height, state)
            SELECT 'node' || (c % \(min(Self.nodes, bench.cameras)) + 1), 'segment', cam,
                   cam || '/video/\(today.folder)/' || cam || '-\(today.compact)T' || to_char(m / 60, 'FM00') || to_char(m % 60, 'FM00') || '00Z.mp4',
                   \(today.start) + m * \(IndexScaleBenchmark.minuteNanos), \(today.start) + m * \(IndexScaleBenchmark.minuteNanos) + \(IndexScaleBenchmark.segmentNanos),
                   1800, 4000000, 'h264', 1920, 1080, 'complete'
            FROM generate_series(0, 1439::bigint) AS m CROSS JOIN generate_series(0, \(bench.cameras - 1)::bigint) AS c
                CROSS JOIN LATERAL (SELECT 'cam' || to_char(c, 'FM000') AS cam) AS name
            WHERE m <> 1 + (\(day) * \(IndexScaleBenchmark.missingDayFactor) + c * \(IndexScaleBenchmark.missingCameraFactor)) % \(IndexScaleBenchmark.missingRange)
            ORDER BY m, c
            """
    }

    /// Each node writes its cameras' segments of the day after the fill, minute by minute, one
    /// `put` a row on a thread of its own, until the nodes have written `putSample` rows in all.
    func timePuts(_ catalogs: [PostgresCatalog]) throws -> (rows: Int, seconds: Double) {
        let day = IndexScaleBenchmark.Day(bench.days)
        let perNode = Self.putSample / catalogs.count
        let outcome = Mutex<(rows: Int, failures: [String])>((0, []))
        let group = DispatchGroup()
        let t0 = SystemClocks.monotonicNanos()
        for (n, catalog) in catalogs.enumerated() {
            group.enter()
            Thread { [bench] in
                defer { group.leave() }
                var written = 0
                do {
                    minutes: for minute in 0..<1440 {
                        for camera in stride(from: n, to: bench.cameras, by: catalogs.count) {
                            guard written < perNode else { break minutes }
                            try catalog.put(bench.segment(bench.camera(camera), day, minute: minute))
                            written += 1
                        }
                    }
                } catch {
                    outcome.withLock { $0.failures.append("\(catalog.node): \(error)") }
                }
                outcome.withLock { $0.rows += written }
            }.start()
        }
        group.wait()
        let elapsed = Double(SystemClocks.monotonicNanos() - t0) / 1e9
        let (rows, failures) = outcome.withLock { ($0.rows, $0.failures) }
        guard failures.isEmpty else { throw BenchUsageError("put failed: \(failures.joined(separator: "; "))") }
        return (rows, elapsed)
    }

    private func seconds(_ work: () throws -> Void) throws -> Double {
        try milliseconds(work) / 1e3
    }
}
