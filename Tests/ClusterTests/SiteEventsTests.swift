import CaptureTesting
@testable import Cluster
import Foundation
@testable import Recorder
import Testing

/// Motion events across the site: each node's `CatalogReplicator` copies its events (and their
/// review marks) into the catalogue, and `SiteView` lists every node's newest first a page at a
/// time, finds one by the catalogue's id with its node's address, and marks it.
@Suite(.timeLimit(.minutes(2))) struct SiteEventsTests {
    private static let io = CatalogBackend.io

    @Test func eachNodesEventsReachTheCatalogueAndAreListedMarkedAndRemoved() async throws {
        let server = try TestPostgres()
        defer { server.stop() }
        let dir = try TemporaryDirectory("vigil-site-events")
        defer { dir.remove() }
        let settings = ClusterSettings(database: try ClusterDatabaseURL(server.url), node: "node-a")
        let catalog = try await Self.io.run { try PostgresCatalog(configuration: settings.clientConfiguration(), node: "node-a") }
        defer { catalog.close() }
        let site = SiteView(settings: settings)
        let index = try await Self.io.run { try RecordingIndex(root: dir.path) }
        let replicator = CatalogReplicator(index: index) { catalog }

        // An event from before the node joined, one of node-b at the same instant, one under way.
        try await Self.io.run {
            try index.startMotionEvent(camera: "porch", startNanos: 1_000)
            try index.endMotionEvent(camera: "porch", startNanos: 1_000, endNanos: 2_000, peakPercent: 10, picture: "porch/events/1.jpg")
            try index.keepCatalogJournal(true)
            try index.startMotionEvent(camera: "porch", startNanos: 5_000)
            let other = try PostgresCatalog(configuration: settings.clientConfiguration(), node: "node-b")
            defer { other.close() }
            try other.putMotionEvent(
                .init(id: 0, camera: "gate", startNanos: 1_000, endNanos: 1_500, peakPercent: 3, picture: nil, reviewedNanos: nil), replacingMark: false)
        }
        #expect(await Self.io.run { replicator.pass() } == 2)
        @Sendable func listed(before: RecordingIndex.MotionEventCursor? = nil, limit: Int = 10, unreviewed: Bool = false) async throws -> [SiteEvent] {
            try await Self.io.run { try site.events(camera: nil, from: nil, to: nil, unreviewedOnly: unreviewed, before: before, limit: limit) }
        }
        let all = try await listed()
        #expect(all.map { "\($0.node) \($0.event.camera) \($0.event.startNanos) \($0.event.endNanos.map(String.init) ?? "-")" } == [
            "node-a porch 5000 -", all[1].node == "node-a" ? "node-a porch 1000 2000" : "node-b gate 1000 1500",
            all[1].node == "node-a" ? "node-b gate 1000 1500" : "node-a porch 1000 2000",
        ])
        // One a page: each once, in the same order.
        var paged: [Int64] = [], cursor: RecordingIndex.MotionEventCursor?
        while let next = try await listed(before: cursor, limit: 1).first {
            paged.append(next.event.id)
            cursor = RecordingIndex.MotionEventCursor(next.event)
        }
        #expect(paged == all.map(\.event.id))

        // The event under way ends here: the catalogue follows, picture and all.
        try await Self.io.run {
            try index.endMotionEvent(camera: "porch", startNanos: 5_000, endNanos: 9_000, peakPercent: 40, picture: "porch/events/5.jpg")
        }
        #expect(await Self.io.run { replicator.pass() } == 1)
        let ended = try #require(try await Self.io.run { try site.event(id: all[0].event.id) })
        #expect(ended.event.event.endNanos == 9_000 && ended.event.event.picture == "porch/events/5.jpg" && ended.address == "")

        // Marked on another node's page (the catalogue alone: this node was down): a later write
        // of the event from here, without a mark, keeps it.
        let porch = try #require(try await Self.io.run { try site.setEventReviewed(node: "node-a", camera: "porch", startNanos: 5_000, at: 77) })
        #expect(porch.event.reviewedNanos == 77)
        try await Self.io.run { try index.putMotionEvent(try #require(try index.motionEvent(camera: "porch", startNanos: 5_000)), replacingMark: false) }
        #expect(await Self.io.run { replicator.pass() } == 1)
        #expect(try await Self.io.run { try site.event(id: all[0].event.id) }?.event.event.reviewedNanos == 77)
        // Marked here: the mark reaches the catalogue; cleared here, it is cleared there too, even
        // after a write of the marked row that was read before the clearing.
        let earlier = try #require(try await Self.io.run { try index.motionEvent(camera: "porch", startNanos: 1_000) })
        try await Self.io.run { _ = try index.setMotionEventReviewed(id: earlier.id, at: 88) }
        #expect(await Self.io.run { replicator.pass() } >= 1)
        #expect(try await listed(unreviewed: true).map { "\($0.node) \($0.event.camera)" } == ["node-b gate"])
        let marked = try #require(try await Self.io.run { try index.motionEvent(id: earlier.id) })
        try await Self.io.run { _ = try index.setMotionEventReviewed(id: earlier.id, at: nil) }
        try await Self.io.run { try catalog.putMotionEvent(marked, replacingMark: true) }
        #expect(await Self.io.run { replicator.pass() } >= 1)
        #expect(try await listed(unreviewed: true).map { "\($0.node) \($0.event.startNanos)" } == ["node-a 1000", "node-b 1000"])
        #expect(try await Self.io.run { try site.setEventReviewed(node: "node-a", camera: "porch", startNanos: 5_000, at: nil) }?.event.reviewedNanos == nil)
        #expect(try await Self.io.run { try site.setEventReviewed(node: "node-c", camera: "porch", startNanos: 5_000, at: 1) } == nil)

        // Removed by retention here: removed from the catalogue; node-b's is left alone.
        #expect(try await Self.io.run { try index.removeMotionEvents(camera: "porch", endingBefore: 3_000) } == ["porch/events/1.jpg"])
        #expect(await Self.io.run { replicator.pass() } == 1)
        #expect(try await listed().map { "\($0.node) \($0.event.startNanos)" } == ["node-a 5000", "node-b 1000"])
        #expect(try await Self.io.run { try index.catalogChangesWaiting() } == 0)
    }
}
