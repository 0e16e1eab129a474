import Glibc

/// This machine's loopback, by name or address (`localhost`, 127.0.0.0/8, `::1`): where a web
/// server needs no token and a database connection no TLS. Alone in its file so the fuzz target
/// of `ClusterDatabaseURL` builds with it.
enum LoopbackHost {
    static func contains(_ host: String) -> Bool {
        let host = host.lowercased()
        if host == "localhost" { return true }
        // inet_pton reads a C string, which ends at a NUL: "127.0.0.1" followed by a NUL and a
        // name of the attacker's would read as loopback (the forwarded-for fuzz target found
        // this in its sibling, `ForwardedFor.isAddress`).
        guard !host.utf8.contains(0) else { return false }
        var v4 = in_addr(), v6 = in6_addr()
        if inet_pton(AF_INET, host, &v4) == 1 { return UInt32(bigEndian: v4.s_addr) >> 24 == 127 }
        if inet_pton(AF_INET6, host, &v6) == 1 {
            return withUnsafeBytes(of: &v6) { $0.prefix(15).allSatisfy { $0 == 0 } && $0[15] == 1 }
        }
        return false
    }
}
