import Glibc
import Synchronization

/// The room on one storage root, as the recordings written under it share it with the index.
///
/// A movie output that meets a full disk pauses: it asks about once a second whether it may
/// write again (`mayWrite`) instead of opening a file, and so writing a header, at every retry.
/// Without a storage keeper for the root the free space answers. With one (`manage`), the keeper
/// answers: it holds every writer back (`hold`) from the moment a recording or the index meets a
/// full disk until the index has written what waits and has its reserve back, so the room a sweep
/// frees for the index is not taken by the next segment's writes before the index's own write
/// lands (the segment then stayed `writing`, nothing was left to delete, and recording stopped).
public final class StorageRoom: Sendable {
    public let root: String
    /// The keeper holds writers back; read by each writer at every frame.
    private let held = Atomic<Bool>(false)
    /// A keeper's request to look again (it runs on the keeper's thread), set while it manages the root.
    private let keeper = Mutex<(@Sendable () -> Void)?>(nil)
    /// A look is asked for and not begun yet: a paused writer asks every second, and a slow
    /// keeper must not find a queue of them.
    private let lookAsked = Atomic<Bool>(false)

    private static let rooms = Mutex<[String: StorageRoom]>([:])

    private init(root: String) { self.root = root }

    /// The one `StorageRoom` of `root` (its real path, so `a/../a` and a link name the same root).
    public static func of(root: String) -> StorageRoom {
        let key = realpath(root, nil).map { resolved in
            defer { free(resolved) }
            return String(cString: resolved)
        } ?? root
        return rooms.withLock { rooms in
            if let room = rooms[key] { return room }
            let room = StorageRoom(root: key)
            rooms[key] = room
            return room
        }
    }

    /// Free and total bytes of the file system holding `path`, as an unprivileged writer sees them.
    public static func space(_ path: String) -> (free: Int64, total: Int64)? {
        var st = statvfs()
        guard statvfs(path, &st) == 0 else { return nil }
        return (Int64(st.f_bavail) * Int64(st.f_frsize), Int64(st.f_blocks) * Int64(st.f_frsize))
    }

    /// Free room after which a paused writer goes on: 2 % of the disk, what the sweep after a
    /// full disk makes free, so a writer does not resume into a disk that cannot take a fragment.
    public static func roomToResume(totalBytes: Int64) -> Int64 { totalBytes / 50 }

    // MARK: - Writers

    /// The keeper holds writers back: a segment being written ends at the next frame.
    public var isHeld: Bool { held.load(ordering: .acquiring) }

    /// A writer met a full disk. With a keeper, every writer under the root is held back until
    /// it has made room for the index and the recordings; without one, the writer waits for room itself.
    public func writerFoundDiskFull() {
        hold()
        askKeeperToLook()
    }

    /// Whether a paused writer may open a file again. With a keeper: once it released the
    /// writers (asked to look again while it has not). Without: once the free room allows.
    public func mayWrite() -> Bool {
        if keeper.withLock({ $0 != nil }) {
            guard isHeld else { return true }
            askKeeperToLook()
            return false
        }
        guard let space = Self.space(root) else { return true }
        return space.free >= Self.roomToResume(totalBytes: space.total)
    }

    private func askKeeperToLook() {
        guard let look = keeper.withLock({ $0 }), !lookAsked.exchange(true, ordering: .acquiringAndReleasing) else { return }
        look()
    }

    // MARK: - The keeper

    /// The storage keeper decides from now on; `look` queues a look at the room on its thread,
    /// which begins with `lookBegins()`.
    public func manage(look: @escaping @Sendable () -> Void) {
        keeper.withLock { $0 = look }
    }

    /// The keeper stopped: writers decide by the free room again, and none stays held.
    public func unmanage() {
        keeper.withLock { $0 = nil }
        held.store(false, ordering: .releasing)
        lookAsked.store(false, ordering: .releasing)
    }

    /// The keeper began the look it was asked for: the next request queues another.
    public func lookBegins() { lookAsked.store(false, ordering: .releasing) }

    /// The keeper needs the free room for the index: writers stop before writing more. Only
    /// while a keeper manages the root, which alone releases them (a keeper that was never
    /// started would hold them for good).
    public func hold() {
        keeper.withLock { if $0 != nil { held.store(true, ordering: .releasing) } }
    }

    /// The index has written what waited and has its reserve: writers go on.
    public func release() { held.store(false, ordering: .releasing) }
}
