import Glibc

/// This machine's loopback, by name or address (`localhost`, 127.0.0.0/8, `::1`): where a web
/// server needs no token and a database connection no TLS. Alone in its file so the fuzz target
/// of `ClusterDatabaseURL` builds with it.
enum LoopbackHost {
    static func contains(_ host: String) -> Bool {
        let host = host.lowercased()
        if host == "localhost" { return true }
        var v4 = in_addr(), v6 = in6_addr()
        if inet_pton(AF_INET, host, &v4) == 1 { return UInt32(bigEndian: v4.s_addr) >> 24 == 127 }
        if inet_pton(AF_INET6, host, &v6) == 1 {
            return withUnsafeBytes(of: &v6) { $0.prefix(15).allSatisfy { $0 == 0 } && $0[15] == 1 }
        }
        return false
    }
}
