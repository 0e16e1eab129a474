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
        // Leases of 15 s: a node settles for 20 s, time for the later nodes to join.
        let site = try await LeasedSite(leaseSeconds: 15)
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

extension ClusterRunTests {
    /// Planned moves are make-before-break: a node stopped with SIGTERM hands its cameras over
    /// (the taker writes each before the giver stops it), and when it starts again the others
    /// hand it its share back the same way. The files, by their own frame times, leave no gap
    /// at any move: between one node's last frame and the next node's first there is at most a
    /// frame's interval (10 fps), and the short overlap ends within the hand-over's limit.
    @Test func plannedMovesHandCamerasOverWithoutAGap() async throws {
        let site = try await LeasedSite()
        defer { site.remove() }
        let giver = "node-a"
        let given = Set(site.listed.first { $0.name == giver }!.cameras)
        let process = site.nodes[giver]!.process
        kill(process.processIdentifier, SIGTERM)
        #expect(await waitForExit(process, seconds: 30) && process.terminationStatus == 0)
        let log = VigilBinary.output(in: site.nodes[giver]!.dir)
        for camera in given.sorted() {
            let line = log.split(separator: "\n").first { $0.contains("gives up \(camera): handed over:") }
            print("\(giver): \(line ?? "no hand-over of \(camera)")")
            #expect(line != nil, "\(log.suffix(3000))")
        }
        #expect(given.isSubset(of: site.held(except: giver)), "\(site.status() ?? [])")
        // Started again: the others hand it two cameras back.
        let stopped = Date()
        try site.start(giver)
        #expect(await site.waitForTwoEach(seconds: 60), "\(site.status() ?? [])")
        // A clip across its stop's hand-over, through another node, which fetches the giver's
        // file: of a camera the giver had finished a segment of (one it took a moment before
        // may have none).
        let index = try RecordingIndex(root: site.nodes[giver]!.dir + "/data")
        let camera = try #require(given.sorted().first { !((try? index.entries(camera: $0, kind: .segment, states: [.complete])) ?? []).isEmpty },
                                  "\(giver) finished no segment of \(given.sorted())")
        try expectAClipAcrossNodes(site: site, page: site.nodes.keys.sorted().first { $0 != giver }!, camera: camera, from: giver, before: stopped)
        try await site.stopAll()
        let handedBack = site.nodes.filter { $0.key != giver }.values.map { VigilBinary.output(in: $0.dir) }
            .joined().split(separator: "\n").filter { $0.contains(": handed over:") }
        #expect(handedBack.count >= 2, "\(handedBack)")
        for name in site.nodes.keys.sorted() {
            for line in VigilBinary.output(in: site.nodes[name]!.dir).split(separator: "\n")
            where line.contains("hand") || line.contains("took the lease") || line.contains("gives up") { print("\(name): \(line)") }
        }
        var moves = 0
        for (camera, gap) in try site.gapsAtMoves() {
            moves += 1
            print("\(camera): \(String(format: "%.3f", gap)) s between one node's last frame and the next node's first at a move")
            #expect(gap <= 0.25, "\(camera): a gap of \(gap) s at a planned move")
        }
        #expect(moves >= 4, "\(moves) moves found in the indexes")
        // Overlaps end within the hand-over's limit (LeaseKeeper.handOverLimit, 6 s).
        #expect(try site.longestOverlap().seconds < 6)
        // And the catalogue tells each overlap for the hand-over it is: one writer per camera.
        let verified = site.verify()
        #expect(verified.overlaps == 0 && verified.handOvers >= 1, "\(verified.output)")
        site.expectEveryFileDecodes()
    }
}
