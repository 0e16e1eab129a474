import CaptureTesting
import Foundation
import Hummingbird
import HummingbirdTesting
import Recorder
import Synchronization
import Testing
@testable import WebServer

/// With `[cluster]`, a read of the site's catalogue may wait for PostgreSQL (up to 2 s, or a
/// database that stopped answering). It used to hold the web server's one I/O thread, so this
/// node's own files, listings and clips queued behind it. The catalogue here answers only once
/// the local file has been served: on one thread the two would wait for each other until the
/// catalogue gives up (30 s), and the file would come second.
@Suite(.timeLimit(.minutes(2))) struct SlowSiteTests {
    /// A catalogue whose reads block until `release()` (or 30 s), as a database that does not answer.
    final class HangingSite: SiteCatalog {
        let node = "here"
        let released = Mutex(false)
        let started = Mutex(0)
        var databaseContact: (reachedSecondsAgo: Double?, connectedForSeconds: Double?) { (nil, nil) }

        func release() { released.withLock { $0 = true } }
        struct NoAnswer: Error {}
        private func hang() throws {
            started.withLock { $0 += 1 }
            for _ in 0..<300 where !released.withLock({ $0 }) { usleep(100_000) }
            throw NoAnswer()
        }
        func recordings(camera: String, kinds: [RecordingIndex.Kind], from: Int64, to: Int64) throws -> [SiteRecording] { try hang(); return [] }
        func recording(id: Int64) throws -> (recording: SiteRecording, address: String)? { try hang(); return nil }
        func heldCameras() throws -> [HeldCamera] { try hang(); return [] }
        func events(
            camera: String?, from: Int64?, to: Int64?, unreviewedOnly: Bool, before: RecordingIndex.MotionEventCursor?, limit: Int
        ) throws -> [SiteEvent] { try hang(); return [] }
        func event(id: Int64) throws -> (event: SiteEvent, address: String)? { try hang(); return nil }
        func setEventReviewed(node: String, camera: String, startNanos: Int64, at nanos: Int64?) throws -> SiteEvent? { try hang(); return nil }
    }

    @Test func aSlowCatalogueNeverDelaysThisNodesFiles() async throws {
        let recording = try await Recording.start(segments: 1)
        defer { recording.remove() }
        let segment = try #require(try recording.keeper.index.entries(kind: .segment, states: [.complete]).first)
        let site = HangingSite()
        try await recording.stopping {
            try await recording.server(site: site).application().test(.router) { client in
                // Two site reads at once (the camera list asks who records what elsewhere).
                async let cameras = client.execute(uri: "/api/v1/cameras", method: .get) { $0.status }
                async let more = client.execute(uri: "/api/v1/cameras", method: .get) { $0.status }
                #expect(await waitUntil(seconds: 20) { site.started.withLock { $0 } == 2 }, "the site was not asked")
                let served = try await client.execute(uri: "/api/v1/recordings/\(segment.id)/file", method: .get) { response in
                    (response.status, site.released.withLock { $0 })
                }
                #expect(served.0 == .ok)
                #expect(served.1 == false, "the file was served only after the catalogue gave up")
                site.release()
                // Without the site, the list is this node's cameras (the page says the rest is unknown).
                let answers = try await [cameras, more]
                #expect(answers == [.ok, .ok])
            }
        }
    }
}
