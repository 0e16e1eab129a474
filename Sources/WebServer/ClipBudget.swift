import CheckedMath
import Hummingbird
import Synchronization

/// What clips being built may take: `[http] max_clips` at once, and the bytes of each reserved
/// against the free-space floor until it is sent. Each clip is written to the disk that holds the
/// recordings; checked one by one, several long clips could together cross the floor, and
/// retention's sweep would then delete the oldest recordings to make room for downloads.
final class ClipBudget: Sendable {
    let limit: Int
    private let state = Mutex<(clips: Int, bytes: Int64)>((0, 0))

    init(limit: Int) { self.limit = limit }

    /// Takes a place for a clip of about `needed` bytes on a disk with `room` bytes above its
    /// floor now (nil: unknown, let it try): 503 when `limit` clips are being built, 507 when
    /// it does not fit beside the others' reservations. Both are given back when the ticket goes.
    func reserve(needed: Int64, room: Int64?) throws(APIError) -> Ticket {
        let refusal: APIError? = state.withLock { s in
            guard s.clips < limit else {
                return APIError(.serviceUnavailable, limit == 0 ? "clips are turned off ([http] max_clips = 0)"
                    : "\(limit) clip(s) are being built now (max_clips = \(limit)): retry when one is done")
            }
            // Bytes add up from sizes on disk (each far below Int64's range); saturate all the same.
            let (reserved, overflow) = s.bytes.addingReportingOverflow(needed)
            if let room, overflow || reserved > room {
                return APIError(
                    .init(code: 507, reasonPhrase: "Insufficient Storage"),
                    "a clip of that range needs about \(needed / 1_048_576) MiB, and the disk under the recordings has \(max(0, room.subtracting(s.bytes) ?? 0) / 1_048_576) MiB above its free-space floor"
                        + (s.clips > 0 ? " beside the \(s.clips) clip(s) being built" : "") + ": pick a shorter range")
            }
            s.clips += 1
            s.bytes = overflow ? .max : reserved
            return nil
        }
        if let refusal { throw refusal }
        return Ticket(budget: self, bytes: needed)
    }

    fileprivate func giveBack(_ bytes: Int64) {
        state.withLock { s in
            s.clips -= 1
            s.bytes = max(0, s.bytes - bytes)
        }
    }

    /// Clips being built now, and the bytes they hold.
    var reserved: (clips: Int, bytes: Int64) { state.withLock { $0 } }

    /// One clip's place and bytes, given back when it is dropped.
    final class Ticket: Sendable {
        private let budget: ClipBudget
        private let bytes: Int64
        fileprivate init(budget: ClipBudget, bytes: Int64) {
            self.budget = budget
            self.bytes = bytes
        }
        deinit { budget.giveBack(bytes) }
    }
}
