import CaptureTesting
@testable import Cluster
import Foundation
import PostgresNIO
import Recorder
import Synchronization
import Testing

/// What only the PostgreSQL catalogue has: its migrations under a lock, the refusal of a newer
/// schema, rows scoped by node, checks on what it reads back, and the bridge's deadline.
@Suite(.timeLimit(.minutes(2))) struct PostgresCatalogTests {
    private static let io = CatalogBackend.io

    private func open(_ schema: String, node: String = "node-a", on server: TestPostgres? = nil, deadline: Duration = .seconds(10)) async throws -> PostgresCatalog {
        let server = try server ?? TestPostgres.shared()
        return try await Self.io.run { try PostgresCatalog.inSchema(schema, of: server, node: node, deadline: deadline) }
    }

    @Test func aFreshDatabaseGetsEverySQLiteVersionsTables() async throws {
        let server = try TestPostgres.shared()
        let schema = try server.freshSchema()
        let catalog = try await open(schema)
        defer { catalog.close() }
        #expect(PostgresCatalog.schemaVersion >= RecordingIndex.schemaVersion, "a step for each SQLite version, then the cluster's own")
        #expect(try server.psql("SELECT version FROM \(schema).vigil_schema") == "\(PostgresCatalog.schemaVersion)\n")
        let columns = try server.psql("""
            SELECT table_name || '.' || column_name FROM information_schema.columns WHERE table_schema = '\(schema)'
            AND table_name IN ('recordings', 'motion_events') ORDER BY 1
            """).split(separator: "\n")
        #expect(columns.contains("recordings.node") && columns.contains("motion_events.reviewed_ns") && columns.contains("motion_events.node"))
        // Opened again: nothing to do, the version stays.
        let again = try await open(schema)
        again.close()
        #expect(try server.psql("SELECT count(*), max(version) FROM \(schema).vigil_schema") == "1|\(PostgresCatalog.schemaVersion)\n")
    }

    @Test func aVersionTwoDatabaseIsMigratedToTheCurrentOne() async throws {
        let server = try TestPostgres.shared()
        let schema = try server.freshSchema()
        try await open(schema).close()
        try await Self.io.run {
            let catalog = try PostgresCatalog.inSchema(schema, of: server, node: "node-a")
            try catalog.endMotionEvent(camera: "porch", startNanos: 1_000, endNanos: 2_000, peakPercent: 1, picture: nil)
            catalog.close()
        }
        try server.psql("""
            DROP INDEX \(schema).motion_events_newest; ALTER TABLE \(schema).motion_events DROP COLUMN reviewed_ns;
            UPDATE \(schema).vigil_schema SET version = 2
            """)
        let catalog = try await open(schema)
        defer { catalog.close() }
        #expect(try server.psql("SELECT version FROM \(schema).vigil_schema") == "\(PostgresCatalog.schemaVersion)\n")
        let reviewed = try await Self.io.run { () throws -> Int64? in
            let id = try #require(try catalog.motionEvents(camera: nil, from: nil, to: nil).first?.id)
            _ = try catalog.setMotionEventReviewed(id: id, at: 42)
            return try catalog.motionEvent(id: id)?.reviewedNanos
        }
        #expect(reviewed == 42, "the event kept, the column back")
    }

    @Test func threeNodesStartingTogetherMigrateOnceWithoutErrors() async throws {
        let server = try TestPostgres.shared()
        let schema = try server.freshSchema()
        // Each on a thread of its own, released together.
        let start = DispatchSemaphore(value: 0)
        let results = Mutex<[String]>([])
        let threads = (0..<3).map { n in
            Thread {
                start.wait()
                do {
                    let catalog = try PostgresCatalog.inSchema(schema, of: server, node: "node-\(n)")
                    catalog.close()
                    results.withLock { $0.append("ok") }
                } catch {
                    results.withLock { $0.append("\(error)") }
                }
            }
        }
        threads.forEach { $0.start() }
        for _ in threads { start.signal() }
        #expect(await waitUntil(seconds: 60) { results.withLock { $0.count } == 3 })
        #expect(results.withLock { $0 } == ["ok", "ok", "ok"])
        #expect(try server.psql("SELECT count(*), max(version) FROM \(schema).vigil_schema") == "1|\(PostgresCatalog.schemaVersion)\n")
    }

    @Test func aSchemaFromANewerVigilIsRefusedAndLeftAlone() async throws {
        let server = try TestPostgres.shared()
        let schema = try server.freshSchema()
        try await open(schema).close()
        try server.psql("UPDATE \(schema).vigil_schema SET version = 99")
        await #expect(throws: CatalogError.newerSchema(found: 99, known: PostgresCatalog.schemaVersion)) { try await self.open(schema) }
        #expect(try server.psql("SELECT version FROM \(schema).vigil_schema") == "99\n")
        #expect("\(CatalogError.newerSchema(found: 99, known: 4))".contains("upgrade this node"))
    }

    @Test func eachNodeWritesOnlyItsOwnRowsAndReadsEveryNodes() async throws {
        let server = try TestPostgres.shared()
        let schema = try server.freshSchema()
        let a = try await open(schema, node: "node-a")
        let b = try await open(schema, node: "node-b")
        defer { a.close(); b.close() }
        // Both nodes recorded a file of the same name (a camera that moved, the same second).
        let fromA = segment("same", start: 1_000, bytes: 111)
        let fromB = segment("same", start: 1_000, bytes: 222)
        try await Self.io.run {
            try a.put(fromA)
            try b.put(fromB)
            try a.endMotionEvent(camera: "porch", startNanos: 5, endNanos: 6, peakPercent: 1, picture: nil)
            try b.endMotionEvent(camera: "porch", startNanos: 5, endNanos: 7, peakPercent: 2, picture: nil)
        }
        #expect(try await Self.io.run { try b.all() }.map(\.bytes).sorted() == [111, 222], "one row per node")
        #expect(try await Self.io.run { try a.motionEvents(camera: "porch", from: nil, to: nil) }.compactMap(\.endNanos).sorted() == [6, 7])

        try await Self.io.run { try a.setState(.missing, path: fromA.path) }
        let states = try await Self.io.run { try b.all() }.map { "\($0.bytes) \($0.state)" }.sorted()
        #expect(states == ["111 missing", "222 complete"], "node-a's state change left node-b's row alone")
        try await Self.io.run { try a.remove(path: fromA.path) }
        #expect(try await Self.io.run { try a.all() }.map(\.bytes) == [222], "node-a's removal left node-b's row")
        #expect(try server.psql("SELECT node FROM \(schema).recordings") == "node-b\n")
    }

    @Test func valuesReadBackAreCheckedBeforeUse() async throws {
        let server = try TestPostgres.shared()
        let schema = try server.freshSchema()
        let catalog = try await open(schema)
        defer { catalog.close() }
        let columns = "node, kind, camera, path, start_ns, end_ns, frames, bytes, codec, width, height, state"
        for (values, why) in [
            ("'x', 'hologram', 'porch', 'p/1', 1, 2, 1, 1, 'h264', 1, 1, 'complete'", "unknown kind"),
            ("'x', 'segment', 'porch', 'p/2', 1, 2, 1, 1, 'h264', 1, 1, 'melted'", "unknown state"),
            ("'x', 'segment', 'porch', 'p/3', 1, 2, 1, -5, 'h264', 1, 1, 'complete'", "negative size"),
            ("'x', 'segment', 'porch', 'p/4', 1, 2, -1, 1, 'h264', 1, 1, 'complete'", "negative frames"),
            ("'x', 'segment', 'porch', 'p/5', 9, 2, 1, 1, 'h264', 1, 1, 'complete'", "ends before it starts"),
            ("'x', 'segment', 'porch', 'p/6', \(Int64.min), \(Int64.max), 1, 1, 'h264', 1, 1, 'complete'", "a span no Int64 holds"),
            ("'x', 'segment', 'porch', 'p/7', 1, 2, 1, 1, 'h264', 9223372036854775807, 1, 'complete'", "width"),
        ] {
            try server.psql("DELETE FROM \(schema).recordings; INSERT INTO \(schema).recordings (\(columns)) VALUES (\(values))")
            await #expect(throws: CatalogError.self, "\(why)") { try await Self.io.run { try catalog.all() } }
        }
        try server.psql("""
            DELETE FROM \(schema).recordings; INSERT INTO \(schema).recordings (\(columns)) VALUES ('x', 'segment', 'porch', 'p/8', -9, 2, 1, 1, 'h264', 1, 1, 'complete')
            """)
        await #expect(throws: CatalogError.self, "a first start before 1970") { try await Self.io.run { try catalog.bytesRecorded(sinceNanos: 0) } }
        try server.psql("DELETE FROM \(schema).recordings")
        try server.psql("INSERT INTO \(schema).motion_events (node, camera, start_ns, end_ns, peak_percent) VALUES ('x', 'porch', 1, 2, 'NaN')")
        await #expect(throws: CatalogError.self, "a peak that is not a number") {
            try await Self.io.run { try catalog.motionEvents(camera: nil, from: nil, to: nil) }
        }
        try server.psql("UPDATE \(schema).motion_events SET peak_percent = 1, end_ns = 0")
        await #expect(throws: CatalogError.self, "an event that ends before it starts") {
            try await Self.io.run { try catalog.motionEvents(camera: nil, from: nil, to: nil) }
        }
        try server.psql("UPDATE \(schema).motion_events SET end_ns = NULL")
        #expect(try await Self.io.run { try catalog.motionEvents(camera: nil, from: nil, to: nil) }.count == 1, "a valid row reads")
    }

    @Test func aCallFromTheCooperativePoolIsRefusedNotRisked() async throws {
        let catalog = try await open(try TestPostgres.shared().freshSchema())
        defer { catalog.close() }
        #expect(throws: CatalogError.calledFromSwiftConcurrency) { try catalog.cameras() }
        #expect(try await Self.io.run { try catalog.cameras() } == [])
    }

    /// A server that stops answering (SIGSTOP: its sockets stay open) gives a clear error at the
    /// deadline instead of a caller blocked for TCP's minutes; once it answers again, so does
    /// the catalogue.
    @Test func aServerThatStopsAnsweringGivesAClearErrorAndTheCatalogueRecovers() async throws {
        let server = try TestPostgres()
        defer { server.stop() }
        let catalog = try await open("public", on: server, deadline: .seconds(1))
        defer { catalog.close() }
        try await Self.io.run { try catalog.put(segment("before", start: 1_000)) }
        server.pause()
        let failure = await Self.io.run { () -> CatalogError? in
            do { _ = try catalog.all(); return nil } catch { return error as? CatalogError }
        }
        guard case .unavailable(let why) = failure else {
            Issue.record("a paused server gave \(String(describing: failure)), not .unavailable")
            server.resume()
            return
        }
        #expect(why.contains("no answer within"), "\(why)")
        #expect("\(failure!)".hasPrefix("the cluster catalogue is not answering"))
        // A write as well: the caller is never held.
        let writeFailure = await Self.io.run { () -> CatalogError? in
            do { try catalog.put(segment("during", start: 2_000)); return nil } catch { return error as? CatalogError }
        }
        #expect(writeFailure.map { if case .unavailable = $0 { true } else { false } } == true, "\(String(describing: writeFailure))")
        server.resume()
        let recovered = await waitUntil(seconds: 30) {
            (try? await Self.io.run { try catalog.put(segment("after", start: 3_000)); return try catalog.all() })?
                .contains { $0.path.hasSuffix("after.mp4") } == true
        }
        #expect(recovered, "the catalogue answers again once the server does")
        let paths = try await Self.io.run { try catalog.all() }.map(\.path)
        #expect(paths.first == "porch/video/before.mp4" && paths.last == "porch/video/after.mp4")
    }

    /// After a long outage the catalogue answers as soon as the server does. postgres-nio's pool
    /// waits longer after each failed connection (0.1 s × 1.25ⁿ, up to a minute): a catalogue
    /// that kept its pool would stay away for seconds after the server came back, and a node's
    /// lease renewal miss its round (a fence for nothing). A call that failed starts a fresh client.
    @Test func afterALongOutageTheCatalogueAnswersAsSoonAsTheServerDoes() async throws {
        let server = try TestPostgres.shared()
        let schema = try server.freshSchema("outage")
        var proxy = try TCPProxy(upstreamPort: server.port)
        defer { proxy.stop() }
        var configuration = try ClusterDatabaseURL("postgresql://\(server.user)@127.0.0.1:\(proxy.port)/postgres").clientConfiguration(password: nil)
        configuration.options.additionalStartupParameters = [("search_path", schema)]
        let catalog = try await Self.io.run { [configuration] in try PostgresCatalog(configuration: configuration, node: "node-a", deadline: .seconds(1)) }
        defer { catalog.close() }
        // Down: every connection refused at once, for long enough that a pool would wait ~10 s.
        let port = proxy.port
        proxy.stop()
        var failed = 0
        let downAt = ContinuousClock.now
        while ContinuousClock.now - downAt < .seconds(40) {
            if (try? await Self.io.run { try catalog.all() }) == nil { failed += 1 }
            try await Task.sleep(for: .milliseconds(250))
        }
        #expect(failed > 20, "\(failed) calls failed while the server was down")
        proxy = try TCPProxy(upstreamPort: server.port, port: port)
        var answered = 0
        for _ in 0..<3 where answered == 0 {
            if (try? await Self.io.run { try catalog.all() }) != nil { answered += 1 }
        }
        #expect(answered == 1, "none of three calls after the server came back was answered")
    }

    /// A migration gets its own deadline, not a call's: while another node holds the migration's
    /// lock for 3 s (as while it fills a large new table, 24 s at 33.6 M rows), a catalogue with a
    /// 1 s deadline, and a node's join, wait for it and open. A caller that must not wait
    /// (`migrating: false`, the page) is told at once that the schema is behind.
    @Test func aMigrationIsNotCutShortByACallsDeadline() async throws {
        let server = try TestPostgres.shared()
        let schema = try server.freshSchema("slow")
        let behind = await Self.io.run { () -> CatalogError? in
            do { _ = try PostgresCatalog.inSchema(schema, of: server, node: "node-a", deadline: .seconds(1), migrating: false); return nil }
            catch { return error as? CatalogError }
        }
        guard case .unavailable(let why) = behind else { Issue.record("\(String(describing: behind))"); return }
        #expect(why.contains("version 0 of \(PostgresCatalog.schemaVersion)"), "\(why)")
        let lock = PostgresCatalog.migrationLock
        // Held by this test's psql (granted, and running its sleep): other suites' nodes migrate
        // their own schemas under the same lock at the same time, so a count of every holder and
        // waiter is not this test's.
        let held = """
            SELECT count(*) FROM pg_locks l JOIN pg_stat_activity a USING (pid) WHERE l.locktype = 'advisory' AND l.granted \
            AND l.classid = \(lock >> 32) AND l.objid = \(lock & 0xFFFF_FFFF) AND a.pid <> pg_backend_pid() AND a.query LIKE '%pg_sleep(3)%'
            """
        // psql holds the lock on a Dispatch thread, not one of Swift's pool.
        func holdTheLock() async throws -> Task<String, any Error> {
            let holder = Task {
                try await withCheckedThrowingContinuation { done in
                    DispatchQueue.global().async { done.resume(with: Result { try server.psql("SELECT pg_advisory_lock(\(lock)); SELECT pg_sleep(3)") }) }
                }
            }
            #expect(await waitUntil(seconds: 10) { (try? server.psql(held)) == "1\n" }, "the lock was never taken")
            return holder
        }
        var holder = try await holdTheLock()
        let catalog = try await open(schema, deadline: .seconds(1))
        defer { catalog.close() }
        _ = try await holder.value
        #expect(try server.psql("SELECT version FROM \(schema).vigil_schema") == "\(PostgresCatalog.schemaVersion)\n")
        // The node's join (ClusterService) on another schema: the same.
        let joining = try server.freshSchema("slowjoin")
        let client = PostgresClient(configuration: try PostgresCatalog.configuration(joining, of: server))
        let running = Task { await client.run() }
        defer { running.cancel() }
        holder = try await holdTheLock()
        let found = try await PostgresCatalog.upgrade(client, deadline: .seconds(1))
        _ = try await holder.value
        #expect(found == 0)
        #expect(try server.psql("SELECT version FROM \(joining).vigil_schema") == "\(PostgresCatalog.schemaVersion)\n")
        #expect(try await PostgresCatalog.upgrade(client, deadline: .seconds(1)) == PostgresCatalog.schemaVersion)
    }
}
