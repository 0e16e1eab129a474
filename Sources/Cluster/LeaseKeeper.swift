import Foundation
import Logging
import Recorder

/// Which of the cluster's shared network cameras this node records, one round at a time (every
/// third of the lease, sooner when another node's lease is about to run out):
///
/// 1. renew the leases it holds; a camera whose lease another node took is stopped at once;
/// 2. take free cameras, and expired ones, up to its fair share (the shared cameras over the
///    live nodes, rounded up), preferring by a hash of camera and node so that nodes prefer
///    different cameras and a restarted node gets its own back;
/// 3. above its share (a node joined), give one camera up, at most one every two leases: the
///    cluster rebalances slowly.
///
/// Expired leases are taken only after this node has talked to the database for a lease and a
/// third without a break: after the database was away for everyone, the owners renew first
/// (they try every second) and keep their cameras.
actor LeaseKeeper {
    let table: LeaseTable
    let cameras: CameraLeases
    private(set) var held: Set<String> = []
    private var lastGiven: ContinuousClock.Instant?
    /// A round under way (one whose caller gave up at its deadline may still run): the next waits
    /// its turn rather than interleave with it.
    private var busy = false
    private let logger = Logger(label: "vigil.cluster")

    init(table: LeaseTable, cameras: CameraLeases) {
        self.table = table
        self.cameras = cameras
    }

    /// One round; returns how long to wait before the next (a lease of another node that runs
    /// out sooner than a third of the lease brings the next round forward).
    func round(connectedFor: Duration) async throws -> Duration {
        let lease = table.leaseSeconds
        guard !busy else { return .seconds(1) }
        busy = true
        defer { busy = false }
        let shared = await cameras.shared()
        let sharedSet = Set(shared)
        for camera in held where !sharedSet.contains(camera) {
            // No longer shared (a reload): stop it, then free its row.
            await stop(camera, because: "it is no longer in the configuration")
            try await table.give([camera])
        }
        let renewed = try await table.renew(held.sorted())
        for camera in held.subtracting(renewed) {
            await stop(camera, because: "another node took its lease")
        }
        try await table.offer(shared)
        let (rows, live) = try await table.state(of: shared)
        let fair = shared.isEmpty ? 0 : (shared.count + max(1, live) - 1) / max(1, live)
        let settled = connectedFor >= .milliseconds(Int64(lease * 4000 / 3))
        if held.count < fair {
            let takeable = rows.filter { !$0.isMine && ($0.owner == nil || $0.isMineFromBefore || (settled && $0.expiresInSeconds < 0)) }
                .sorted { Self.preference($0.camera, table.node) > Self.preference($1.camera, table.node) }
            for row in takeable.prefix(fair - held.count) {
                guard let epoch = try await table.take(row.camera, expired: settled) else { continue }
                if await cameras.hold(row.camera) {
                    held.insert(row.camera)
                    let from = row.owner.map { $0 == table.node ? "this node before it restarted" : "\($0), whose lease ran out" } ?? "nobody"
                    logger.notice("took the lease of \(row.camera) (epoch \(epoch), from \(from)): recording it")
                } else {
                    try await table.give([row.camera])
                }
            }
        } else if held.count > fair, lastGiven.map({ ContinuousClock.now - $0 > .seconds(2 * lease) }) ?? true,
                  let camera = held.min(by: { Self.preference($0, table.node) < Self.preference($1, table.node) }) {
            // Stopped before it is given up: never two nodes writing it.
            await stop(camera, because: "this node holds \(held.count) of \(shared.count) cameras for \(live) node(s)")
            try await table.give([camera])
            lastGiven = .now
        }
        let third = lease / 3
        let soonest = rows.filter { !$0.isMine && $0.owner != nil && $0.expiresInSeconds > 0 }.map(\.expiresInSeconds).min()
        let wait = min(third, max(0.5, (soonest ?? third) + 0.2))
        return .milliseconds(Int64(wait * 1000))
    }

    /// Stops every camera and gives their leases up, so other nodes take them at once (SIGTERM).
    func giveAll() async throws {
        let all = held.sorted()
        for camera in all { await stop(camera, because: "this node stops") }
        try await table.give(all)
    }

    private func stop(_ camera: String, because why: String) async {
        logger.notice("gives up \(camera): \(why); stopping it")
        let began = ContinuousClock.now
        held.remove(camera)
        await cameras.release(camera)
        let took = (ContinuousClock.now - began).components
        logger.notice("\(camera) stopped in \(String(format: "%.2f", Double(took.seconds) + Double(took.attoseconds) / 1e18)) s, its files finalized")
    }

    /// A stable hash of camera and node (FNV-1a): the same on every node and every run.
    static func preference(_ camera: String, _ node: String) -> UInt64 {
        var hash: UInt64 = 0xcbf2_9ce4_8422_2325
        for byte in (camera + "\u{0}" + node).utf8 {
            hash ^= UInt64(byte)
            hash = hash &* 0x100_0000_01b3
        }
        return hash
    }
}
