import CaptureTesting
import Foundation
import Glibc
import Recorder
import Testing

extension ClusterRunTests {
    /// Six network cameras shared by three nodes: each recorded by exactly one node, two each;
    /// a node killed with kill -9 has its cameras taken by the others within a second of its
    /// leases running out, and recorded there; started again, it takes its share back, slowly.
    @Test func sixNetworkCamerasAreSharedByThreeNodesAndAKilledNodesCamerasMove() async throws {
        let site = try await LeasedSite()
        defer { site.remove() }
        let victim = "node-a"
        let moved = Set(site.listed.first { $0.name == victim }!.cameras)
        let survivor = try #require(site.nodes.keys.sorted().first { $0 != victim })
        // The gap below runs from the victim's last catalogued segment: wait for one of each of its
        // cameras (it may have taken one a moment ago, by the rebalance that made "two each").
        let catalogued = await waitUntil(seconds: 20) {
            moved.allSatisfy { camera in
                site.recordingNodes(listedBy: survivor, camera: camera).contains(victim)
            }
        }
        #expect(catalogued, "\(survivor)'s API lists no segment of \(moved.sorted()) from \(victim)")
        kill(site.nodes[victim]!.process.processIdentifier, SIGKILL)
        let killedAt = ContinuousClock.now
        // When the dead node's leases run out, by the database's clock: read a moment after the
        // kill, so that a renewal it sent just before has landed (nothing renews them after).
        try await Task.sleep(for: .milliseconds(300))
        let expiries = try site.leaseTimes("expires")
        let movedInTime = await waitUntil(seconds: site.lease + 5) { moved.isSubset(of: site.held(except: victim)) }
        print("kill -9 of \(victim): its cameras \(moved.sorted()) were held elsewhere after \(ContinuousClock.now - killedAt)")
        #expect(movedInTime, "\(victim)'s cameras \(moved.sorted()) were not taken within \(site.lease + 5) s: \(site.status() ?? [])")
        // Taken within a second of running out, by the database's clock: the takers wake for the
        // expiry, and one that lost a race for a camera takes the next in the same round.
        let taken = try site.leaseTimes("taken")
        for camera in moved.sorted() {
            let late = (taken[camera] ?? .infinity) - (expiries[camera] ?? 0)
            print("\(camera): taken \(String(format: "%.2f", late)) s after \(victim)'s lease ran out")
            #expect(late >= 0 && late <= 1, "\(camera): taken \(late) s after its lease ran out")
        }
        // And recorded there: a new file of each on a surviving node's disk.
        let before = Date()
        let recorded = await waitUntil(seconds: 20) {
            moved.allSatisfy { camera in
                site.nodes.keys.filter { $0 != victim }.contains { name in
                    site.recordings(of: name, camera: camera).contains {
                        ((try? FileManager.default.attributesOfItem(atPath: $0)[.modificationDate] as? Date) ?? .distantPast) > before
                    }
                }
            }
        }
        #expect(recorded, "the moved cameras were not recorded by the surviving nodes")
        // A survivor's API lists the gap: the dead node's last segment, then the new holder's first.
        let camera = try #require(moved.sorted().first)
        var gap: (start: Date, end: Date)?
        var listing: [String: Any] = [:]
        let listed = await waitUntil(seconds: 20) {
            listing = site.api(survivor, "/api/v1/cameras/\(camera)/recordings?from=2000-01-01T00:00:00Z&to=2100-01-01T00:00:00Z") ?? [:]
            let nodes = Set((listing["recordings"] as? [[String: Any]] ?? []).compactMap { $0["node"] as? String })
            gap = (listing["gaps"] as? [[String: Any]] ?? []).compactMap { g -> (Date, Date)? in
                guard let start = (g["start"] as? String).flatMap(Self.instant), let end = (g["end"] as? String).flatMap(Self.instant) else { return nil }
                return (start, end)
            }.last
            return nodes.contains(victim) && nodes.count > 1 && gap != nil
        }
        #expect(listed, "\(survivor)'s API does not list \(camera) from \(victim) and another node with a gap: \(listing)")
        if let gap {
            print("\(survivor)'s API lists \(camera)'s gap of \(String(format: "%.1f", gap.end.timeIntervalSince(gap.start))) s after the kill of \(victim)")
            #expect(gap.end.timeIntervalSince(gap.start) < site.lease + 6, "\(gap)")
        }

        // Started again, the node takes its share back, one camera at a time.
        try site.start(victim)
        #expect(await site.waitForTwoEach(seconds: 90), "\(site.status() ?? [])")
        // A clip across the failover, through a survivor: the dead node's last file and the next.
        try expectAClipAcrossNodes(site: site, page: survivor, camera: camera, from: victim, before: before)
        try await site.stopAll()
        // No overlap but hand-overs: the taker began after the dead node's last frame.
        #expect(site.verify().overlaps == 0, "\(site.verify().output)")
        site.expectEveryFileDecodes()
    }

    /// A node frozen (SIGSTOP) for 60 s: its cameras move to the others; woken (SIGCONT), it
    /// stops them as soon as it sees their leases taken, and no camera is written by two nodes
    /// at once for longer than a lease.
    @Test func aNodeFrozenForAMinuteLosesItsCamerasAndStopsThemWhenItWakes() async throws {
        let site = try await LeasedSite()
        defer { site.remove() }
        let frozen = "node-b"
        let moved = Set(site.listed.first { $0.name == frozen }!.cameras)
        let pid = site.nodes[frozen]!.process.processIdentifier
        kill(pid, SIGSTOP)
        #expect(await waitUntil(seconds: site.lease + 5) { moved.isSubset(of: site.held(except: frozen)) }, "\(site.status() ?? [])")
        try await Task.sleep(for: .seconds(60))
        kill(pid, SIGCONT)
        // Woken, it renews, finds the leases taken, and stops those cameras.
        let stopped = await waitUntil(seconds: site.lease + 5) {
            let log = VigilBinary.output(in: site.nodes[frozen]!.dir)
            return moved.allSatisfy { log.contains("\($0) stopped in ") }
        }
        #expect(stopped, "\(VigilBinary.output(in: site.nodes[frozen]!.dir).suffix(3000))")
        let log = VigilBinary.output(in: site.nodes[frozen]!.dir)
        for camera in moved {
            #expect(log.contains("gives up \(camera): another node took its lease"), "\(log.suffix(3000))")
            // Noticed, then stopped with its files finalized, and said how long that took (printed,
            // not asserted: no test bounds how long Vigil takes; the bound is the overlap below).
            let seconds = log.components(separatedBy: "\(camera) stopped in ").dropFirst().first.flatMap { Double($0.prefix { $0 != " " }) }
            print("woken \(frozen) stopped \(camera) \(seconds.map { "\($0) s" } ?? "?") after finding its lease taken")
            #expect(seconds != nil, "\(log.suffix(3000))")
        }
        try await site.stopAll()
        let overlap = try site.longestOverlap()
        print("SIGSTOP 60 s of \(frozen): longest time two nodes wrote one camera: \(overlap.seconds) s (\(overlap.camera))")
        #expect(overlap.seconds < site.lease, "\(overlap)")
        site.expectEveryFileDecodes()
    }

    /// One node cut off from the database alone (its connections go through a proxy that stops
    /// passing bytes): its peers say they reach the database, so it fences its cameras on their
    /// capture threads before their leases can run out; they move, and no camera is written by
    /// two nodes at once. Healed, it finds them taken and stops them, and later gets its share.
    @Test func aNodeCutOffFromTheDatabaseAloneFencesItsCamerasBeforeTheyMove() async throws {
        let cut = "node-a"
        let site = try await LeasedSite(leaseSeconds: 6, proxied: cut)
        defer { site.remove() }
        let moved = Set(site.listed.first { $0.name == cut }!.cameras)
        let log = { VigilBinary.output(in: site.nodes[cut]!.dir) }
        site.proxy!.cut()
        let cutAt = Int64(Date().timeIntervalSince1970 * 1e9)
        #expect(await waitUntil(seconds: site.lease + 5) { moved.isSubset(of: site.held(except: cut)) }, "\(site.status() ?? [])")
        #expect(log().contains("cannot renew its leases while node"), "\(log().suffix(3000))")
        for camera in moved {
            #expect(log().contains("camera \(camera): fenced, its lease may now be another node's"), "\(log().suffix(3000))")
        }
        // Fenced: nothing of those cameras is written on the cut-off node any more.
        let files = { moved.flatMap { site.recordings(of: cut, camera: $0) }.map { ($0, (try? FileManager.default.attributesOfItem(atPath: $0)[.size] as? Int) ?? -1) } }
        let before = files()
        try await Task.sleep(for: .seconds(5))
        let after = files()
        #expect(before.map(\.0) == after.map(\.0) && before.map(\.1) == after.map(\.1), "\(before) → \(after)")
        site.proxy!.heal()
        let healedAt = Int64(Date().timeIntervalSince1970 * 1e9)
        let stopped = await waitUntil(seconds: site.lease + 10) {
            moved.allSatisfy { log().contains("gives up \($0): another node took its lease") }
        }
        #expect(stopped, "\(log().suffix(3000))")
        // It rejoins and gets two cameras again, handed over one at a time (the slow rebalance).
        #expect(await site.waitForTwoEach(seconds: 90), "\(site.status() ?? [])")
        try await site.stopAll()
        let overlap = try site.longestOverlap()
        print("\(cut) cut off from the database: longest time two nodes wrote one camera: \(overlap.seconds) s (\(overlap.camera))")
        // The planned moves after the heal (its share handed back, the stop) overlap by a few
        // frames on purpose, within the hand-over's limit (6 s); the fenced move must not overlap
        // at all, which the files show below.
        #expect(overlap.seconds < 6, "\(overlap)")
        for line in log().split(separator: "\n") where line.contains("fenced") || line.contains("took the lease") { print("\(cut): \(line)") }
        // Between the cut-off node's last frame and the taker's first: never below zero.
        let indexes = try site.nodes.mapValues { try RecordingIndex(root: $0.dir + "/data").entries(kind: .segment) }
        for camera in moved.sorted() {
            let lastHere = indexes[cut, default: []].filter { $0.camera == camera && $0.startNanos < healedAt }.map(\.endNanos).max()
            let firstThere = indexes.filter { $0.key != cut }.values.joined().filter { $0.camera == camera && $0.startNanos > cutAt }.map(\.startNanos).min()
            if let lastHere, let firstThere {
                print("\(camera): \(String(format: "%.2f", Double(firstThere - lastHere) / 1e9)) s between \(cut)'s last frame and the next node's first")
                #expect(firstThere > lastHere)
            } else {
                Issue.record("\(camera): no file of \(cut) before the cut (\(lastHere as Any)) or of another node after it (\(firstThere as Any))")
            }
        }
        site.expectEveryFileDecodes()
    }

    /// The database frozen for two minutes: every node keeps its cameras and records on; when
    /// it answers again, nobody's cameras move.
    @Test func twoMinutesWithoutTheDatabaseStopNoCameraAndMoveNone() async throws {
        let site = try await LeasedSite()
        defer { site.remove() }
        let holders = Dictionary(uniqueKeysWithValues: site.listed.flatMap { node in node.cameras.map { ($0, node.name) } })
        site.server.pause()
        let pausedAt = Date()
        try await Task.sleep(for: .seconds(120))
        // Every camera was recorded throughout, by its holder: a file that ended in the last 5 s.
        for (camera, node) in holders {
            let recent = site.recordings(of: node, camera: camera).contains {
                ((try? FileManager.default.attributesOfItem(atPath: $0)[.modificationDate] as? Date) ?? .distantPast) > Date() - 5
            }
            #expect(recent, "\(camera) on \(node) is not recording \(Date().timeIntervalSince(pausedAt)) s into the outage")
        }
        site.server.resume()
        print("the database answers again at \(Date())")
        // Back: the holders renew first; a few rounds later nothing has moved.
        #expect(await waitUntil(seconds: 20) { site.status()?.allSatisfy(\.alive) == true && site.status()?.count == 3 })
        try await Task.sleep(for: .seconds(3 * site.lease))
        let after = Dictionary(uniqueKeysWithValues: (site.status() ?? []).flatMap { node in node.cameras.map { ($0, node.name) } })
        #expect(after == holders, "cameras moved after the outage: \(holders) → \(after)")
        try await site.stopAll()
        for name in site.nodes.keys {
            let log = VigilBinary.output(in: site.nodes[name]!.dir)
            #expect(log.contains("is not answering"), "\(name) said nothing of the outage")
            for line in log.split(separator: "\n") where line.contains("answers again") { print("\(name): \(line)") }
            // Away for everyone: no camera was fenced (a peer back first arms a fence for when it
            // could take leases, a lease and a third later; the renewal lands before).
            #expect(!log.contains(": fenced, its lease may now be another node's"), "\(name): \(log.suffix(3000))")
            // The log says what happens: the retry as it is, "fenced" only for a fence that fell,
            // no library warning, and the leases given up at the stop.
            #expect(log.contains("tries again every second"), "\(name): \(log.suffix(3000))")
            let fenceWarnings = log.split(separator: "\n").filter { $0.contains(" warning ") && $0.contains("fenced") }
            #expect(fenceWarnings.isEmpty, "\(name): \(fenceWarnings)")
            #expect(!log.contains("hasn't been called"), "\(name): \(log.suffix(3000))")
            #expect(log.contains("gave up the leases of"), "\(name): \(log.suffix(3000))")
        }
        // Nothing had to move: the start's even share may have moved one camera, or none.
        #expect(try site.longestOverlap(moved: false).seconds < site.lease)
        site.expectEveryFileDecodes()
        // The shared catalogue lists every segment each node indexed, those of the outage too
        // (journaled in the node's index, written when the database answered).
        for (name, node) in site.nodes {
            let local = try RecordingIndex(root: node.dir + "/data").entries(kind: .segment)
            let catalogued = try site.server.psql("SELECT path, state FROM recordings WHERE node = '\(name)' AND kind = 'segment'")
                .split(separator: "\n").map(String.init)
            #expect(Set(catalogued) == Set(local.map { "\($0.path)|\($0.state)" }), "\(name): \(catalogued.count) catalogued, \(local.count) indexed")
            let duringOutage = local.filter { $0.startNanos > Int64(pausedAt.timeIntervalSince1970 * 1e9) + 5_000_000_000 && $0.endNanos < Int64(pausedAt.timeIntervalSince1970 * 1e9) + 115_000_000_000 }
            #expect(duringOutage.count > 50, "\(name) indexed \(duringOutage.count) segments during the outage")
            print("\(name): \(catalogued.count) segments in the catalogue, as in its index; \(duringOutage.count) of them recorded while the database was away")
            #expect(VigilBinary.output(in: node.dir).contains("change(s) journaled meanwhile are in it"), "\(name) said nothing of the journal")
            // And the node's index agrees with its files (the truth check, `vigil verify`).
            let verified = VigilBinary.run(["verify", "--data", node.dir + "/data"])
            #expect(verified.status == 0, "\(name): \(verified.output.suffix(1500))\(verified.errorOutput.suffix(500))")
        }
    }
}
