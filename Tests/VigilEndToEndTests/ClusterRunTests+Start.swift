import CaptureTesting
import Foundation
import Glibc
import Recorder
import Testing

extension ClusterRunTests {
    /// A site stopped cleanly: every node is listed as stopped (not gone) with no camera, and
    /// every lease is free. Started again one node after the other, each takes its share (two of
    /// six) while the others join, so the site comes up two each without a camera moving.
    @Test func aSiteStoppedCleanlyIsListedStoppedAndStartsAgainBalanced() async throws {
        // Leases of 10 s: a node settles for 13.3 s, time for the later nodes to join.
        let site = try await LeasedSite(leaseSeconds: 10)
        defer { site.remove() }
        try await site.stopAll()
        let listing = VigilBinary.run(["cluster", "status", "--config", site.file])
        print(listing.output)
        for name in site.nodes.keys {
            let line = listing.output.split(separator: "\n").first { $0.contains(" \(name) ") } ?? ""
            #expect(line.contains("stopped") && line.contains("records 0") && !line.contains("gone"), "\(listing.output)")
        }
        #expect(site.status()?.allSatisfy { !$0.alive && $0.cameras.isEmpty } == true, "\(site.status() ?? [])")
        #expect(try site.server.psql("SELECT count(*) FROM camera_leases WHERE owner IS NOT NULL") == "0\n")

        // One at a time: each node has joined before the next starts.
        for name in site.nodes.keys.sorted() {
            try site.start(name)
            let joined = await waitUntil(seconds: 30) { VigilBinary.output(in: site.nodes[name]!.dir).contains("joined the cluster") }
            #expect(joined, "\(name): \(VigilBinary.output(in: site.nodes[name]!.dir).suffix(2000))")
        }
        #expect(await site.waitForTwoEach(seconds: 60), "\(site.status() ?? [])")
        for (name, node) in site.nodes {
            let log = VigilBinary.output(in: node.dir)
            let taken = log.split(separator: "\n").filter { $0.contains("took the lease of") }
            // The first node up took two, not six; nobody had to give one up to rebalance.
            #expect(taken.count == 2, "\(name) took \(taken.count) leases: \(taken)")
            #expect(!log.contains("gives up"), "\(name): \(log.suffix(3000))")
        }
        try await site.stopAll()
        site.expectEveryFileDecodes()
    }
}
