import Glibc

/// The open-file limit (RLIMIT_NOFILE) and how Vigil shares it. Every camera needs descriptors
/// to record (its device or socket, the segment being written, stills, the index, hooks), and
/// so does every web connection (its socket, a file it sends): with Debian's default soft limit
/// of 1024, a thousand idle sockets once made recording fail with "Too many open files". So
/// Vigil raises its soft limit to the hard one at start (the systemd unit sets `LimitNOFILE`),
/// keeps `reserve` descriptors that the web server may never take, and caps the server's
/// connections at what is left, counting two descriptors for each.
public enum OpenFileLimit {
    /// The soft limit now.
    public static var current: Int {
        var limit = rlimit()
        guard getrlimit(__rlimit_resource_t(RLIMIT_NOFILE.rawValue), &limit) == 0 else { return 1024 }
        return Int(clamping: limit.rlim_cur)
    }

    /// Raises the soft limit to the hard one; returns the soft limit in force afterwards.
    @discardableResult
    public static func raiseToHard() -> Int {
        var limit = rlimit()
        guard getrlimit(__rlimit_resource_t(RLIMIT_NOFILE.rawValue), &limit) == 0 else { return current }
        if limit.rlim_cur < limit.rlim_max {
            limit.rlim_cur = limit.rlim_max
            setrlimit(__rlimit_resource_t(RLIMIT_NOFILE.rawValue), &limit)
        }
        return current
    }

    /// Descriptors kept for recording whatever the web server does: a quarter of the limit, at
    /// least 256 (a few dozen cameras' worth).
    public static func reserve(limit: Int) -> Int { max(256, limit / 4) }

    /// The most connections the web server may hold under `limit`: what the reserve leaves, two
    /// descriptors a connection, and at least 8 so that the page still opens.
    public static func webConnections(limit: Int) -> Int { max(8, (limit - reserve(limit: limit)) / 2) }
}
