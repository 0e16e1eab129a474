import Capture
import Glibc
import Plumbing
import Synchronization

/// Wrong tokens at `POST /login`, per client address: three are free, then each failure makes
/// that address wait twice as long as the last before its next try (1 s, 2 s, 4 s, … at most
/// `longestWait`), answered 429 with `Retry-After` meanwhile. A right token resets the address;
/// a quiet `forgetAfter` forgets it, so no one is locked out for good, and guessing a 16-character
/// token at this pace takes longer than the universe has. At most `maxAddresses` are kept (the
/// oldest forgotten first), so a flood of addresses cannot grow it without bound. An IPv6
/// address counts by its /64 (`key`): one machine is given a whole /64 and could otherwise try
/// from a new address each time.
final class LoginThrottle: Sendable {
    struct Entry {
        var failures: Int
        var lastFailure: Int64
        var blockedUntil: Int64
    }

    static let freeTries = 3
    static let longestWait: Int64 = 300 * 1_000_000_000
    static let forgetAfter: Int64 = 900 * 1_000_000_000
    static let maxAddresses = 10_000

    private let entries = Mutex<[String: Entry]>([:])
    /// Monotonic nanoseconds (tests give their own clock).
    private let now: @Sendable () -> Int64

    init(now: @escaping @Sendable () -> Int64 = { SystemClocks.monotonicNanos() }) {
        self.now = now
    }

    /// Whole seconds `address` must still wait before its next try; nil: it may try now.
    func wait(for address: String) -> Int64? {
        let address = Self.key(address)
        let now = now()
        return entries.withLock { entries in
            guard let entry = entries[address], entry.blockedUntil > now else { return nil }
            return (entry.blockedUntil - now + 999_999_999) / 1_000_000_000
        }
    }

    /// A wrong token from `address`.
    func failed(_ address: String) {
        let address = Self.key(address)
        let now = now()
        entries.withLock { entries in
            if entries[address] == nil && entries.count >= Self.maxAddresses { Self.forgetOldest(&entries, now: now) }
            var entry = entries[address].flatMap { now - $0.lastFailure < Self.forgetAfter ? $0 : nil } ?? Entry(failures: 0, lastFailure: now, blockedUntil: 0)
            entry.failures = min(entry.failures + 1, 64)
            entry.lastFailure = now
            let over = entry.failures - Self.freeTries
            if over > 0 {
                let wait = over > 9 ? Self.longestWait : min(Self.longestWait, Int64(1) << (over - 1) * 1_000_000_000)
                entry.blockedUntil = now + wait
            }
            entries[address] = entry
        }
    }

    /// The right token from `address`: its count starts again.
    func succeeded(_ address: String) {
        _ = entries.withLock { $0.removeValue(forKey: Self.key(address)) }
    }

    /// What an address counts as: an IPv6 address its /64 ("2001:db8:1:2::/64"), an
    /// IPv4-mapped one its IPv4 address, anything else itself (an IPv4 address, a "user NAME" key).
    static func key(_ address: String) -> String {
        // An IPv4 client of a dual-stack listener ("::ffff:192.0.2.7") is its IPv4 address, not
        // the /64 every IPv4 client would share.
        if address.lowercased().hasPrefix("::ffff:"), address.dropFirst(7).contains(".") { return String(address.dropFirst(7)) }
        var v6 = in6_addr()
        guard address.contains(":"), !address.utf8.contains(0), inet_pton(AF_INET6, address, &v6) == 1 else { return address }
        let bytes = withUnsafeBytes(of: &v6) { Array($0.prefix(8)) }
        let groups = stride(from: 0, to: 8, by: 2).map { String(UInt16(bytes[$0]) << 8 | UInt16(bytes[$0 + 1]), radix: 16) }
        return groups.joined(separator: ":") + "::/64"
    }

    /// Forgets the addresses quiet for `forgetAfter`, or else the one whose last failure is oldest.
    private static func forgetOldest(_ entries: inout [String: Entry], now: Int64) {
        let before = entries.count
        entries = entries.filter { now - $0.value.lastFailure < forgetAfter }
        if entries.count == before, let oldest = entries.min(by: { $0.value.lastFailure < $1.value.lastFailure })?.key {
            entries.removeValue(forKey: oldest)
        }
    }
}
