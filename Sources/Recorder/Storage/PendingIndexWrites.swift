import Logging

/// Index writes that failed (the disk full with nothing left to delete, the index locked by
/// another process), oldest first: tried again, in order, before each new event and every 30 s
/// until they succeed, so a finished segment is not left listed as being written, nor a deleted
/// file as there. A new write waits behind them, so no older write lands last.
/// Used only on `StorageKeeper.io`, like every storage job.
final class PendingIndexWrites {
    private struct Write {
        let what: String
        let write: () throws -> Void
        var reported = false
    }

    private var writes: [Write] = []
    private let logger: Logger

    init(logger: Logger) { self.logger = logger }

    /// Queues `write` (`what` completes "could not …" in log lines); `reported`: its failure was already said.
    func append(_ what: String, reported: Bool = false, _ write: @escaping () throws -> Void) {
        writes.append(Write(what: what, write: write, reported: reported))
    }

    /// Nothing waits.
    var isEmpty: Bool { writes.isEmpty }

    /// Writes what waits, in order, up to the first that still fails. When the index finds the
    /// disk full, each of `ways` to make room is taken in turn (a sweep, as after ENOSPC from a
    /// recording; then the index's reserve) and the write tried again after each, so a
    /// recording made just before the disk filled is not left out.
    func writeAll(makingRoom ways: [() -> Void]) {
        while let next = writes.first {
            do {
                try Self.attempt(next.write, makingRoom: ways[...])
                writes.removeFirst()
                if next.reported { logger.notice("could \(next.what) at last") }
            } catch {
                if !next.reported {
                    writes[0].reported = true
                    logger.error("could not \(next.what) (tried again until it can be): \(error)")
                }
                return
            }
        }
    }

    private static func attempt(_ write: () throws -> Void, makingRoom ways: ArraySlice<() -> Void>) throws {
        do {
            try write()
        } catch let error as RecorderError where error.isDiskFull && !ways.isEmpty {
            ways.first!()
            try attempt(write, makingRoom: ways.dropFirst())
        }
    }
}
