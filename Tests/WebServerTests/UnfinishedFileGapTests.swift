import Foundation
import Recorder
import Testing
@testable import WebServer

/// A site's listing: a gap that begins at a file its node never finished in the catalogue (the
/// node was killed, or cut off, as the camera moved to another node) is marked as unknown until
/// that node returns, not shown as footage lost; a gap in one node's own footage, or after a
/// finished file, stays a plain gap.
@Suite struct UnfinishedFileGapTests {
    private func listed(_ node: String, _ from: Int64, _ to: Int64, _ state: RecordingIndex.State) -> (node: String?, entry: RecordingIndex.Entry, url: String) {
        let entry = RecordingIndex.Entry(
            kind: .segment, camera: "porch", path: "porch/\(node)-\(from).mp4", startNanos: from * 1_000_000_000, endNanos: to * 1_000_000_000,
            frames: 10, bytes: 100, codec: "h264", width: 160, height: 120, state: state)
        return (node, entry, "")
    }

    private func gapNodes(_ listing: [(node: String?, entry: RecordingIndex.Entry, url: String)]) -> [String?] {
        ApiRoutes.unfinished(before: RecordingsListing(entries: listing.map(\.entry), timeZone: .gmt).gaps, in: listing)
    }

    @Test func aGapAfterAKilledNodesUnfinishedFileIsUnknownUntilItReturns() {
        // node-a's last file was catalogued when it opened (its end not known yet), then node-a
        // was killed and node-b took the camera.
        let listing = [listed("node-a", 0, 10, .complete), listed("node-a", 10, 10, .writing), listed("node-b", 24, 30, .complete)]
        #expect(gapNodes(listing) == ["node-a"])
    }

    @Test func aGapInOneNodesFootageOrAfterAFinishedFileIsAPlainGap() {
        // The same node after its own unfinished file: a gap of that node's (it lost the camera).
        #expect(gapNodes([listed("node-a", 0, 10, .writing), listed("node-a", 20, 30, .complete)]) == [nil])
        // Another node after a finished file: the gap is real.
        #expect(gapNodes([listed("node-a", 0, 10, .complete), listed("node-b", 20, 30, .complete)]) == [nil])
        // A lone node (no cluster: no node names).
        let alone = [listed("node-a", 0, 10, .writing), listed("node-b", 20, 30, .complete)].map { (node: String?.none, entry: $0.entry, url: $0.url) }
        #expect(gapNodes(alone) == [nil])
    }
}
