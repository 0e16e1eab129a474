import Foundation
import Logging
import Plumbing
import Recorder
import Synchronization

/// The audit trail: who (user, credential, address) logged in or failed to, watched live,
/// played a recording, downloaded a clip, marked an event or read the trail, kept in the index's
/// `audit` table for `retentionNanos` (`[http] audit_days`).
///
/// A request never waits for it: rows are queued (at most `maxQueued`; past that they are
/// counted and said once) and written in batches on the index's write lane. Watching is written
/// once per user, camera or file and `repeatWindowNanos`, not once per request: a browser
/// playing one recording asks for it in many ranges, and live view reconnects.
public final class AuditLog: Sendable {
    public enum Action: String, Sendable {
        case login, loginFailed = "login-failed", logout, live, play, clip, mark, audit
        /// Actions a viewer repeats many times for one thing watched.
        var repeats: Bool { self == .live || self == .play }
    }

    private struct State {
        var queued: [RecordingIndex.AuditRow] = []
        var flushing = false
        var dropped = 0
        /// When each (user, credential, action, subject) was last written, for the repeating actions.
        var lastWritten: [String: Int64] = [:]
        var lastPrune: Int64 = 0
    }

    static let maxQueued = 10_000
    static let repeatWindowNanos: Int64 = 600_000_000_000
    static let pruneEveryNanos: Int64 = 3_600_000_000_000

    private let index: RecordingIndex
    private let writes: BlockingIO
    private let retentionNanos: Int64
    private let now: @Sendable () -> Int64
    private let state = Mutex(State())
    private let logger = Logger(label: "vigil.http")

    public init(index: RecordingIndex, writes: BlockingIO, retentionNanos: Int64, now: @escaping @Sendable () -> Int64) {
        self.index = index
        self.writes = writes
        self.retentionNanos = retentionNanos
        self.now = now
    }

    /// Notes an action; returns at once.
    public func record(_ identity: Identity, address: String, _ action: Action, subject: String, outcome: String = "ok") {
        let now = now()
        let row = RecordingIndex.AuditRow(
            atNanos: now, user: identity.user, credential: identity.credential, address: address, action: action.rawValue,
            subject: String(subject.prefix(200)), outcome: String(outcome.prefix(200)))
        let schedule = state.withLock { state -> Bool in
            if action.repeats {
                let key = "\(identity.user)\u{0}\(identity.credential)\u{0}\(action.rawValue)\u{0}\(subject)"
                if let last = state.lastWritten[key], now - last < Self.repeatWindowNanos, now >= last { return false }
                if state.lastWritten.count >= Self.maxQueued { state.lastWritten = state.lastWritten.filter { now - $0.value < Self.repeatWindowNanos } }
                state.lastWritten[key] = now
            }
            guard state.queued.count < Self.maxQueued else {
                state.dropped += 1
                return false
            }
            state.queued.append(row)
            defer { state.flushing = true }
            return !state.flushing
        }
        if schedule { writes.enqueue { [self] in writeQueued() } }
    }

    /// Waits until what was recorded before is in the index (tests, and the trail's own route).
    public func flush() async {
        await writes.run {}
    }

    /// The trail from `since` on, oldest first (what `GET /api/v1/audit` and `vigil audit` list).
    public func rows(since: Int64, user: String?, limit: Int) async throws -> [RecordingIndex.AuditRow] {
        await flush()
        let index = index
        return try await writes.run { try index.audit(since: since, user: user, limit: limit) }
    }

    /// On the write lane: everything queued, in one transaction, and the retention's pruning once an hour.
    private func writeQueued() {
        let now = now()
        let (rows, dropped, prune) = state.withLock { state -> ([RecordingIndex.AuditRow], Int, Bool) in
            defer {
                state.queued = []
                state.dropped = 0
                state.flushing = false
            }
            let prune = now - state.lastPrune >= Self.pruneEveryNanos
            if prune { state.lastPrune = now }
            return (state.queued, state.dropped, prune)
        }
        if dropped > 0 { logger.warning("the audit trail fell behind: \(dropped) actions were not written (more than \(Self.maxQueued) waiting)") }
        do {
            try index.appendAudit(rows)
            if prune { _ = try index.pruneAudit(before: now - retentionNanos) }
        } catch {
            logger.error("the audit trail cannot be written to the index: \(error) (\(rows.count) actions lost)")
        }
    }
}
