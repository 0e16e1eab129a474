import Dispatch
import Glibc
import Synchronization

/// One address a camera's host name resolved to, ready for `socket` and `connect`.
/// `sockaddr_storage` is plain bytes, copied with the value.
public struct ResolvedAddress: Sendable {
    public let family: Int32
    private var storage = sockaddr_storage()
    public let length: socklen_t

    init(_ info: addrinfo) {
        family = info.ai_family
        length = min(info.ai_addrlen, socklen_t(MemoryLayout<sockaddr_storage>.size))
        withUnsafeMutableBytes(of: &storage) { $0.baseAddress!.copyMemory(from: info.ai_addr, byteCount: Int(length)) }
    }

    /// Calls `body` with the address as a `sockaddr` and its length (for `connect`).
    public func withSocketAddress<T>(_ body: (UnsafePointer<sockaddr>, socklen_t) throws -> T) rethrows -> T {
        try withUnsafeBytes(of: storage) { try body($0.baseAddress!.assumingMemoryBound(to: sockaddr.self), length) }
    }

    /// The address in digits (`192.168.1.20`, `fe80::1`).
    public var numericHost: String {
        var text = [CChar](repeating: 0, count: Int(NI_MAXHOST))
        let status = withSocketAddress { getnameinfo($0, $1, &text, socklen_t(text.count), nil, 0, NI_NUMERICHOST) }
        return status == 0 ? String(cString: text) : ""
    }
}

/// Host names resolved without ever holding up the thread that asks for longer than an abort
/// takes to be seen (100 ms). `getaddrinfo` cannot be interrupted: a resolver that does not
/// answer keeps it for its whole timeout (5 s × attempts × name servers; 75 s with
/// `options timeout:30 attempts:3`), and a camera's capture thread waiting in it would keep a
/// stop waiting as long. So each lookup runs on a thread of its own, and the asker waits for
/// its answer in slices, checking its deadline and its `NetworkInterrupt`. A lookup nobody
/// waits for any more ends by itself when the resolver gives up; askers for a name already
/// being looked up share that lookup, so a camera retrying an unanswered name adds no thread.
/// Addresses in digits are converted at once, with no lookup.
public enum HostResolver {
    /// Lookups running at once, at most (a thread each); more is an error, not more threads.
    static let maximumLookups = 64

    private static let running = Mutex<[String: Lookup]>([:])

    /// The addresses of `host` (TCP, `port`), in the order `getaddrinfo` prefers them. Throws
    /// `.aborted` on `interrupt`, `.timeout` at `deadlineNanos` (monotonic), `.other` with the
    /// resolver's reason when the name does not resolve.
    public static func resolve(_ host: String, port: Int, until deadlineNanos: Int64, interrupt: NetworkInterrupt) throws(NetworkFailure) -> [ResolvedAddress] {
        // Stopped already (or given up): no lookup, no thread.
        if interrupt.isAborted { throw .aborted }
        if let numeric = try lookUp(host, port: port, numericOnly: true) { return numeric }
        let key = "\(port) \(host)"
        let lookup: Lookup = try running.withLock { (lookups: inout [String: Lookup]) throws(NetworkFailure) -> Lookup in
            if let shared = lookups[key] { return shared }
            guard lookups.count < maximumLookups else { throw .other("more than \(maximumLookups) host names are being resolved at once") }
            let new = Lookup(host: host, port: port)
            try new.start { running.withLock { _ = $0.removeValue(forKey: key) } }
            lookups[key] = new
            return new
        }
        return try lookup.wait(until: deadlineNanos, interrupt: interrupt)
    }

    /// `getaddrinfo` for a TCP connection to `host`:`port`. With `numericOnly`, nil when `host`
    /// is a name rather than an address in digits (nothing is looked up).
    fileprivate static func lookUp(_ host: String, port: Int, numericOnly: Bool) throws(NetworkFailure) -> [ResolvedAddress]? {
        var hints = addrinfo()
        hints.ai_socktype = Int32(SOCK_STREAM.rawValue)
        hints.ai_flags = AI_NUMERICSERV | (numericOnly ? AI_NUMERICHOST : 0)
        var found: UnsafeMutablePointer<addrinfo>?
        let status = getaddrinfo(host, String(port), &hints, &found)
        if numericOnly && status == EAI_NONAME { return nil }
        // The name is in the camera's address, which every message shows (redacted): it is not
        // repeated here, since a malformed address can make part of a password the "host".
        guard status == 0, let first = found else { throw .other("cannot resolve the host name: \(String(cString: gai_strerror(status)))") }
        defer { freeaddrinfo(first) }
        var addresses: [ResolvedAddress] = []
        var next: UnsafeMutablePointer<addrinfo>? = first
        while let info = next {
            if info.pointee.ai_addr != nil { addresses.append(ResolvedAddress(info.pointee)) }
            next = info.pointee.ai_next
        }
        return addresses
    }
}

/// One `getaddrinfo` call on a thread of its own, and its outcome for whoever waits.
private final class Lookup: Sendable {
    private let host: String
    private let port: Int
    private let outcome = Mutex<Result<[ResolvedAddress], NetworkFailure>?>(nil)
    private let answered = DispatchSemaphore(value: 0)

    init(host: String, port: Int) {
        self.host = host
        self.port = port
    }

    /// Starts the lookup's thread; `finished` runs on it once the outcome is in.
    func start(finished: @escaping @Sendable () -> Void) throws(NetworkFailure) {
        let job = Job(lookup: self, finished: finished)
        let context = Unmanaged.passRetained(job).toOpaque()
        var thread = pthread_t()
        let status = pthread_create(&thread, nil, { context in
            let job = Unmanaged<Job>.fromOpaque(context!).takeRetainedValue()
            job.lookup.run()
            job.finished()
            return nil
        }, context)
        guard status == 0 else {
            Unmanaged<Job>.fromOpaque(context).release()
            throw .other("cannot start a thread to resolve the host name: \(String(cString: strerror(status)))")
        }
        pthread_detach(thread)
    }

    private final class Job: Sendable {
        let lookup: Lookup
        let finished: @Sendable () -> Void
        init(lookup: Lookup, finished: @escaping @Sendable () -> Void) {
            self.lookup = lookup
            self.finished = finished
        }
    }

    private func run() {
        let result: Result<[ResolvedAddress], NetworkFailure>
        do throws(NetworkFailure) {
            result = .success(try HostResolver.lookUp(host, port: port, numericOnly: false) ?? [])
        } catch {
            result = .failure(error)
        }
        outcome.withLock { $0 = result }
        answered.signal()
    }

    /// The outcome, once it is in; `.aborted` or `.timeout` first if the interrupt or the
    /// deadline comes before it.
    func wait(until deadlineNanos: Int64, interrupt: NetworkInterrupt) throws(NetworkFailure) -> [ResolvedAddress] {
        while true {
            if let result = outcome.withLock({ $0 }) {
                // Whoever else waits for it wakes too.
                answered.signal()
                return try result.get()
            }
            if interrupt.isAborted { throw .aborted }
            let left = deadlineNanos - NetworkInterrupt.now()
            if left <= 0 { throw .timeout }
            _ = answered.wait(timeout: .now() + .nanoseconds(Int(min(left, 100_000_000))))
        }
    }
}
