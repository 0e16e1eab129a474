import Foundation
import Logging
import Recorder

/// Which of the cluster's shared network cameras this node records, one round at a time (every
/// third of the lease, sooner when another node's lease is about to run out, at once when a
/// node hands one over):
///
/// 1. renew the leases it holds; a camera whose lease another node took is stopped at once
///    (one it hands over: once the taker writes it);
/// 2. take free cameras, offered ones and expired ones, up to its fair share (the shared
///    cameras over the live nodes, rounded up; while settling, over every node the site has
///    known, except for offered ones), preferring by a hash of camera and node so that nodes
///    prefer different cameras and a restarted node gets its own back; a camera another node
///    took first is passed over for the next; a lease that lay run out and untaken for half a
///    second (its takers are settling) is taken above the share;
/// 3. above its share (a node joined), hand one camera over, at most one every two leases: the
///    cluster rebalances slowly, and make-before-break (the giver records until the taker's
///    first frame is in its files, then stops). SIGTERM hands every camera over the same way.
///
/// Expired leases are taken only after this node has talked to the database for a lease and a
/// third without a break: after the database was away for everyone, the owners renew first
/// (they try every second) and keep their cameras.
///
/// The fence (`checkFence`, four times a second): while this node's requests go unanswered,
/// the peers are asked when they last reached the database. If one reached it with a request
/// sent clearly after this node's oldest unanswered one, this node is the one cut off, and its
/// cameras are fenced: from the last renewal's send time plus the lease less a margin, by this
/// node's boot-time clock, their frames are dropped on the capture threads, before the
/// database's clock can give their leases to another node. If no peer reached it (away for
/// everyone, or no peer answers), recording goes on: two nodes recording a camera is better
/// than none.
actor LeaseKeeper {
    let table: LeaseTable
    let cameras: CameraLeases
    private(set) var held: Set<String> = []
    private var lastGiven: ContinuousClock.Instant?
    /// The send time of the last renewal the database answered: every held lease runs at least a
    /// lease from it.
    private var renewedAt: ContinuousClock.Instant?
    /// The send time of this node's oldest request to the database not answered yet (nil: none).
    private var unansweredSince: ContinuousClock.Instant?
    /// The other live nodes' web addresses, as the last round found them.
    private var peers: [String] = []
    /// How many other nodes were live at the last round (those without a web page too).
    private var otherLiveNodes = 0
    /// Held cameras whose fence is set.
    private var fenced: Set<String> = []
    /// Held cameras offered to the others, since when, and when this node first saw a taker
    /// hold it: recorded here until the taker writes them.
    private var handingOver: [String: (offered: ContinuousClock.Instant, taken: ContinuousClock.Instant?)] = [:]
    /// How long a hand-over waits for a taker, and then for the taker's first written frame.
    static let offerLimit = Duration.seconds(3)
    static let handOverLimit = Duration.seconds(6)
    /// How long a lease may lie run out and untaken before a settled node takes it above its
    /// share, in seconds.
    static let strandedAfter = 0.5
    private let witnesses: @Sendable ([String]) async -> [PeerWitness]
    /// A round under way (one whose caller gave up at its deadline may still run): the next waits
    /// its turn rather than interleave with it.
    private var busy = false
    private let logger = Logger(label: "vigil.cluster")

    /// `witnesses`: asks the nodes at these addresses when they last reached the database.
    init(table: LeaseTable, cameras: CameraLeases, witnesses: @escaping @Sendable ([String]) async -> [PeerWitness] = { _ in [] }) {
        self.table = table
        self.cameras = cameras
        self.witnesses = witnesses
    }

    /// How long before a lease's earliest end its camera's frames stop: room for the two
    /// clocks' rates and the frame being written.
    var fenceMargin: Duration { .milliseconds(Int64(max(300, table.leaseSeconds * 100))) }
    /// How much later than this node's unanswered request a peer's answered one must have been
    /// sent to show that the database was there for it: more than the database takes to answer,
    /// so a database that stops for everyone between two nodes' requests fences nobody.
    static let witnessSlack = Duration.milliseconds(300)

    /// How long a node talks to the database without a break before it takes a lease that ran
    /// out: after an outage for everyone, the holders (who try every second) renew first.
    var settling: Duration { .milliseconds(Int64(table.leaseSeconds * 4000 / 3)) }

    /// This node sends requests to the database (a heartbeat, then a round) from `sent` on.
    func attempt(at sent: ContinuousClock.Instant) {
        if unansweredSince == nil { unansweredSince = sent }
    }

    /// The requests sent since `attempt` were all answered.
    func answered() { unansweredSince = nil }

    /// One round; returns how long to wait before the next (a lease of another node that runs
    /// out sooner than a third of the lease brings the next round forward, a hand-over under way
    /// a fifth of a second). `peers`: the other live nodes' web addresses.
    /// `joining`: the node's first round, a third of a lease before its share is taken (so that
    /// nodes started together see each other): only its own cameras from before a restart.
    func round(connectedFor: Duration, peers: [String], joining: Bool = false) async throws -> Duration {
        let lease = table.leaseSeconds
        guard !busy else { return .seconds(1) }
        busy = true
        defer { busy = false }
        self.peers = peers
        let shared = await cameras.shared()
        try await renew(shared: Set(shared))
        try await settleHandOvers(stopping: false)
        try await table.offer(shared)
        let (rows, live, expected) = try await table.state(of: shared)
        let fair = Self.share(of: shared.count, among: live)
        otherLiveNodes = max(0, live - 1)
        let settled = connectedFor >= settling
        // While settling (just started, or back after an outage) a node takes no more than its
        // share among every node the site has known: nodes started together each take theirs.
        let takeUpTo = settled ? fair : min(fair, Self.share(of: shared.count, among: expected))
        if joining {
            try await take(from: rows.filter(\.isMineFromBefore), upTo: takeUpTo, offeredUpTo: 0, expired: false)
        } else if held.count < fair {
            try await take(from: rows, upTo: takeUpTo, offeredUpTo: fair, expired: settled)
        } else if held.count > fair, handingOver.isEmpty, lastGiven.map({ ContinuousClock.now - $0 > .seconds(2 * lease) }) ?? true,
                  let camera = held.min(by: { prefers($1, over: $0) }) {
            // Handed over, not stopped: it records here until the taker writes it.
            logger.notice("hands \(camera) over: this node holds \(held.count) of \(shared.count) cameras for \(live) node(s); it records on until another node does")
            // Tracked before it is offered: an offer that lands while its call fails is followed too.
            handingOver[camera] = (.now, nil)
            lastGiven = .now
            try await table.handOver([camera])
        }
        // A lease run out that nobody took for half a second (the nodes whose share it is are
        // settling: one started a moment ago) is taken by a settled node above its share; the
        // rebalance hands it on later, without a gap. Found by bench-failover: a kill just after
        // a restart left one camera a third of a lease late.
        let stranded = rows.filter { !$0.isMine && !held.contains($0.camera) && $0.owner != nil && !$0.isOffered && $0.expiresInSeconds < -Self.strandedAfter }
        if settled, !joining, let row = stranded.max(by: { prefers($1.camera, over: $0.camera) }) {
            try await take(from: [row], upTo: held.count + 1, offeredUpTo: 0, expired: true)
        }
        if !handingOver.isEmpty { return .milliseconds(200) }
        let third = lease / 3
        let soonest = rows.filter { !$0.isMine && $0.owner != nil && $0.expiresInSeconds > -Self.strandedAfter }.map(\.expiresInSeconds).min()
        let wait = min(third, max(0.5, (soonest.map { $0 > 0 ? $0 : $0 + Self.strandedAfter } ?? third) + 0.2))
        return .milliseconds(Int64(wait * 1000))
    }

    /// Stops what is no longer shared (a reload), renews the rest, and stops what another node
    /// took (unless handed over: `settleHandOvers` stops those); lifts the fence of what it renewed.
    private func renew(shared: Set<String>) async throws {
        for camera in held where !shared.contains(camera) {
            // No longer shared (a reload): stop it, then free its row.
            await stop(camera, because: "it is no longer in the configuration")
            try await table.give([camera])
        }
        let sent = ContinuousClock.now
        let renewed = try await table.renew(held.sorted())
        renewedAt = sent
        for camera in held.subtracting(renewed) where handingOver[camera] == nil {
            await stop(camera, because: "another node took its lease")
        }
        // Lifted only where renewed: a camera handed over meanwhile is another node's now.
        let lifted = fenced.intersection(renewed)
        if !lifted.isEmpty {
            for camera in lifted { await cameras.lift(camera) }
            logger.notice("the database answers this node again and its leases are renewed: fence lifted from \(lifted.sorted().joined(separator: ", "))")
            fenced.subtract(lifted)
        }
    }

    /// Takes cameras up to `limit` held (`offeredLimit` for one its holder hands over: a node
    /// that stops is no longer live, so its cameras fit the live nodes' share even while they
    /// settle), by preference; a camera another node took first is passed over for the next, in
    /// this round. Each is said to be written here as soon as it is, so a giver may stop.
    private func take(from rows: [LeaseTable.Row], upTo limit: Int, offeredUpTo offeredLimit: Int, expired settled: Bool) async throws {
        let takeable = rows.filter { !$0.isMine && ($0.owner == nil || $0.isOffered || $0.isMineFromBefore || (settled && $0.expiresInSeconds < 0)) }
            .sorted { prefers($0.camera, over: $1.camera) }
        for row in takeable where held.count < (row.isOffered ? offeredLimit : limit) {
            guard let epoch = try await table.take(row.camera, expired: settled) else { continue }
            guard await cameras.hold(row.camera) else {
                try await table.give([row.camera])
                continue
            }
            held.insert(row.camera)
            let from = row.owner.map {
                $0 == table.node ? "this node before it restarted" : row.isOffered ? "\($0), which hands it over" : "\($0), whose lease ran out"
            } ?? "nobody"
            logger.notice("took the lease of \(row.camera) (epoch \(epoch), from \(from)): recording it")
            // Said for every take: a row offered after the round's look is taken by hand-over too.
            Task { [table, cameras, logger] in
                guard await cameras.firstWrittenFrame(of: row.camera, within: Self.handOverLimit) else { return }
                do { try await table.recordingStarted(row.camera) } catch {
                    logger.notice("could not say that this node records \(row.camera) (\(CatalogError.from(error))): a giver stops it within \(Int(Self.handOverLimit.inSeconds)) s")
                }
            }
        }
    }

    /// The cameras this node hands over: each is stopped here once its taker writes it (gap 0),
    /// or when the taker writes nothing within `handOverLimit` (a camera that takes one client
    /// at a time: the taker records once this node lets go). One nobody took within
    /// `offerLimit` is kept (`stopping`: stopped and given up).
    private func settleHandOvers(stopping: Bool) async throws {
        guard !handingOver.isEmpty else { return }
        let found = try await table.handOvers(handingOver.keys.sorted())
        for (camera, times) in handingOver.sorted(by: { $0.key < $1.key }) {
            guard let (taker, recording) = found[camera] else { continue }
            let waited = ContinuousClock.now - times.offered
            if let taker, !taker.isEmpty {
                // The taker's time runs from its take, not from the offer.
                let taken = times.taken ?? .now
                handingOver[camera]?.taken = taken
                let seconds = String(format: "%.1f", (ContinuousClock.now - taken).inSeconds)
                guard recording || ContinuousClock.now - taken > Self.handOverLimit else { continue }
                handingOver[camera] = nil
                await stop(camera, because: recording ? "handed over: \(taker) records it (\(seconds) s after its take)"
                    : "\(taker) took it but wrote nothing within \(seconds) s (it records once this node lets go)")
            } else if taker != nil {
                // The taker gave it back (it could not start it): still recorded here; take it back
                // (stopping: and offer it again).
                if try await table.take(camera, expired: false) != nil {
                    if stopping {
                        handingOver[camera] = (.now, nil)
                        try await table.handOver([camera])
                    } else {
                        handingOver[camera] = nil
                        logger.notice("\(camera) came back free from its taker: this node records it on")
                    }
                }
            } else if waited > Self.offerLimit {
                let seconds = String(format: "%.1f", waited.inSeconds)
                if stopping {
                    handingOver[camera] = nil
                    await stop(camera, because: "no node took it within \(seconds) s and this node stops")
                    try await table.give([camera])
                } else {
                    try await table.withdraw([camera])
                    handingOver[camera] = nil
                    logger.notice("no node took \(camera) within \(seconds) s: this node records it on")
                }
            }
        }
    }

    /// While renewals fail, asks the peers whether they reach the database; if one does, fences
    /// every held camera at the end of its lease less the margin (at once if that is past).
    func checkFence() async {
        guard let since = unansweredSince, let renewedAt, !held.isEmpty, fenced != held,
              ContinuousClock.now - since > Self.witnessSlack else { return }
        let asked = ContinuousClock.now
        let answers = await witnesses(peers)
        // Answered, renewed or stopped meanwhile (a round runs while the peers are asked): nothing
        // to fence, and a deadline from the renewal before would be wrong.
        guard unansweredSince == since, self.renewedAt == renewedAt, !held.isEmpty else { return }
        // The peer sent its request no earlier than `asked` less its age.
        let reachers = answers.filter { asked - .milliseconds(Int64($0.reachedSecondsAgo * 1000)) > since + Self.witnessSlack }
        guard let reacher = reachers.first else { return }
        // A lease is taken once it ran out, by a node settled by then (connected a lease and a
        // third): after an outage for everyone, the peers back first are not, and this node's
        // renewal lands before they are.
        let settled = reachers.map { asked - .milliseconds(Int64($0.connectedForSeconds * 1000)) + settling }.min()!
        let deadline = max(renewedAt + .milliseconds(Int64(table.leaseSeconds * 1000)), settled) - fenceMargin
        let left = ContinuousClock.now.duration(to: deadline)
        let newly = held.subtracting(fenced)
        for camera in newly.sorted() { await cameras.fence(camera, at: deadline) }
        fenced.formUnion(newly)
        // "Fenced" is said only when a camera really is: by its capture thread when the fence
        // falls. A fence set for later is most often lifted by a renewal (a database back for
        // everyone answers the peers first).
        let cameras = newly.sorted().joined(separator: ", ")
        if left > .zero {
            logger.notice("""
                this node cannot renew its leases while node \(reacher.node) reaches the database: \(cameras) will be fenced \
                in \(String(format: "%.1f", left.inSeconds)) s unless a renewal lands first
                """)
        } else {
            logger.warning("""
                this node cannot renew its leases while node \(reacher.node) reaches the database: \(cameras) fenced now, \
                before another node can take their leases
                """)
        }
    }

    /// Hands every camera over (SIGTERM): the others take them at once and this node stops each
    /// when its taker writes it; returns the cameras it held. With no other live node (the last
    /// round found none), nobody could take them: they stop and are given up at once.
    @discardableResult
    func handAllOver() async throws -> [String] {
        // A round given up at its deadline may still run: it could withdraw an offer, or take a
        // camera this would not offer.
        while busy { try await Task.sleep(for: .milliseconds(50)) }
        busy = true
        defer { busy = false }
        guard otherLiveNodes > 0 else { return try await giveAll() }
        let all = held.sorted()
        for camera in all where handingOver[camera] == nil { handingOver[camera] = (.now, nil) }
        try await table.handOver(all)
        while !handingOver.isEmpty {
            // Renewed while they wait for their takers: the beat's rounds have ended.
            let sent = ContinuousClock.now
            _ = try await table.renew(handingOver.keys.sorted())
            renewedAt = sent
            try await settleHandOvers(stopping: true)
            if !handingOver.isEmpty { try await Task.sleep(for: .milliseconds(100)) }
        }
        return all
    }

    /// Stops every camera and gives their leases up, so other nodes take them at once (another
    /// process took this node's name); returns the cameras whose leases were given.
    @discardableResult
    func giveAll() async throws -> [String] {
        let all = held.sorted()
        for camera in all { await stop(camera, because: "this node stops") }
        try await table.give(all)
        return all
    }

    private func stop(_ camera: String, because why: String) async {
        logger.notice("gives up \(camera): \(why); stopping it")
        let began = ContinuousClock.now
        held.remove(camera)
        fenced.remove(camera)
        handingOver[camera] = nil
        await cameras.release(camera)
        logger.notice("\(camera) stopped in \(String(format: "%.2f", (ContinuousClock.now - began).inSeconds)) s, its files finalized")
    }

    /// This node would rather record `camera` than `other` (by `preference`).
    private func prefers(_ camera: String, over other: String) -> Bool {
        Self.preference(camera, table.node) > Self.preference(other, table.node)
    }

    /// `cameras` over `nodes` (at least one), rounded up.
    static func share(of cameras: Int, among nodes: Int) -> Int {
        cameras == 0 ? 0 : (cameras + max(1, nodes) - 1) / max(1, nodes)
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
