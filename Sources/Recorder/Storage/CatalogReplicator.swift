import Capture
import Logging
import Plumbing
import ServiceLifecycle
import Synchronization

/// `[cluster]` in `vigil run`: copies this node's recordings and motion events into the
/// cluster's shared catalogue (PostgreSQL), so every node's page and API can list the whole
/// site. It reads the index's journals (`RecordingIndex+CatalogJournal`), writes each noted
/// row as it is now, or removes it, and forgets the notes only once the catalogue has them.
///
/// The catalogue being away never touches recording: the journal grows in the SQLite file,
/// this says so once, and everything is written when the database answers again. It runs
/// first among the recorder's services, so it stops last: the files finalized at shutdown are
/// in the catalogue before the process exits (when the database answers).
///
/// Work is on its own thread (`vigil.catalog`); it looks at the journal every second, which
/// costs one indexed read of a small table, and is how it retries a catalogue that is away.
public final class CatalogReplicator: Service, Sendable {
    private let index: RecordingIndex
    private let open: @Sendable () throws -> any RecordingCatalog
    private let io = BlockingIO("vigil.catalog")
    private let wakeup = Wakeup()
    /// The catalogue once opened, and why it is away (nil: it answered last time); only on `io`.
    private let state = Mutex<(catalog: (any RecordingCatalog)?, away: String?)>((nil, nil))
    private let logger = Logger(label: "vigil.catalog")

    /// Changes written per read of the journal.
    static let batch = 500
    static let intervalNanos: Int64 = 1_000_000_000

    /// `open`: connects to the catalogue (it may block and throw; called on this service's thread).
    public init(index: RecordingIndex, open: @escaping @Sendable () throws -> any RecordingCatalog) {
        self.index = index
        self.open = open
    }

    public func run() async throws {
        await withGracefulShutdownHandler {
            while !wakeup.isStopped {
                await io.run { self.pass() }
                await wakeup.wait(untilMonotonic: SystemClocks.monotonicNanos() + Self.intervalNanos)
            }
        } onGracefulShutdown: { [wakeup] in
            wakeup.stop()
        }
        // The recorder has stopped and indexed its last files: one more pass writes them.
        await io.run { self.pass() }
        await io.run { self.state.withLock { $0.catalog = nil } }
    }

    /// Writes every change noted so far, in batches; on a failure keeps the rest for next time.
    /// Returns how many changes were written.
    @discardableResult
    func pass() -> Int {
        var written = 0
        do {
            let catalog = try state.withLock { s in
                if let catalog = s.catalog { return catalog }
                let catalog = try open()
                s.catalog = catalog
                return catalog
            }
            while true {
                let changes = try index.catalogChanges(limit: Self.batch)
                guard let last = changes.last else { break }
                var seen = Set<String>()
                for change in changes where seen.insert(change.path).inserted {
                    if let entry = try index.entry(path: change.path) {
                        try catalog.put(entry)
                    } else {
                        try catalog.remove(path: change.path)
                    }
                }
                try index.forgetCatalogChanges(through: last.sequence)
                written += changes.count
                if changes.count < Self.batch { break }
            }
            written += try passEvents(to: catalog)
            if let was = state.withLock({ s -> String? in defer { s.away = nil }; return s.away }) {
                logger.notice("the cluster's catalogue answers again (it was away: \(was)); \(written) change(s) journaled meanwhile are in it")
            }
        } catch {
            let waiting = (try? index.catalogChangesWaiting()) ?? 0
            let first = state.withLock { s -> Bool in
                defer { s.away = "\(error)" }
                return s.away == nil
            }
            if first {
                logger.warning("the cluster's catalogue cannot be written (\(error)): \(waiting) change(s) wait in this node's index, written when it answers; recording goes on")
            }
        }
        return written
    }

    /// Writes the motion events' noted changes as `pass` writes the recordings'.
    private func passEvents(to catalog: any RecordingCatalog) throws -> Int {
        var written = 0
        while true {
            let changes = try index.catalogEventChanges(limit: Self.batch)
            guard let last = changes.last else { break }
            // Each event once a batch, as it is now; its mark replaces the catalogue's when it
            // changed here (a clearing must clear it there).
            let marked = Set(changes.filter(\.marked).map { "\($0.startNanos) \($0.camera)" })
            var seen = Set<String>()
            for change in changes where seen.insert("\(change.startNanos) \(change.camera)").inserted {
                if let event = try index.motionEvent(camera: change.camera, startNanos: change.startNanos) {
                    try catalog.putMotionEvent(event, replacingMark: marked.contains("\(change.startNanos) \(change.camera)"))
                } else {
                    try catalog.removeMotionEvent(camera: change.camera, startNanos: change.startNanos)
                }
            }
            try index.forgetCatalogEventChanges(through: last.sequence)
            written += changes.count
            if changes.count < Self.batch { break }
        }
        return written
    }
}
