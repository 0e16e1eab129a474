import Foundation
import Glibc

/// The web server (`[http]`): where it listens and who may use it. Loopback needs no token;
/// any other address does, since the server shows every camera and every recording.
public struct HTTPSettings: Sendable, Equatable {
    /// "HOST:PORT" ("[::1]:8080" for IPv6); empty: no server.
    public var listen = HTTPSettings.defaultListen
    public var tokenFile: String?
    /// The token read from `tokenFile` (never printed).
    public var token: String?
    /// Live viewers at once; one more is told 503.
    public var maxLiveClients = 16
    /// Clips built at once (`GET …/clip.mp4`); one more is told 503.
    public var maxClips = 2
    /// Host names (besides loopback's) that a server without a token answers to: a defence
    /// against DNS rebinding, where another site's page reaches 127.0.0.1 under its own name.
    public var allowedHosts: [String] = []
    /// Open connections at once, for the whole server (also bounded by the open-file limit).
    public var maxConnections = 512
    /// Open connections at once from one client address; one more is refused with 503.
    public var maxConnectionsPerClient = 64
    /// A connection on which nothing moves this long is closed: no new request, no more of a
    /// request's body, or a client that takes none of its answer (a live viewer that stopped).
    public var idleTimeoutSeconds = 30
    /// A new connection's first request head, and every request's body, must have arrived
    /// this long after they began.
    public var headerTimeoutSeconds = 10
    /// A browser session ends after this long without a request…
    public var sessionIdleHours = 24
    /// …and this long after it logged in, whichever comes first.
    public var sessionDays = 30
    /// How long the audit trail (who watched, downloaded, marked or logged in) is kept.
    public var auditDays = 365
    /// Addresses of reverse proxies whose `X-Forwarded-For` (the client's address, for the
    /// login throttle and the audit trail) and `X-Forwarded-Proto: https` (the session cookie
    /// gets `Secure`) are believed. Nobody else's are.
    public var trustedProxies: [String] = []

    public static let defaultListen = "127.0.0.1:8080"
    /// The keys of `[http]`.
    static let keys = ["listen", "token_file", "max_live_clients", "max_clips", "allowed_hosts", "max_connections",
                       "max_connections_per_client", "idle_timeout_seconds", "header_timeout_seconds", "session_idle_hours",
                       "session_days", "audit_days", "trusted_proxies"]

    public static let tokenRecipe = "head -c 32 /dev/urandom | base64 > /etc/vigil/token && chmod 600 /etc/vigil/token"

    public init() {}

    public var isEnabled: Bool { !listen.isEmpty }

    /// `listen` split into host and port; nil when it is not "HOST:PORT" with a port of 1–65535
    /// (0 is allowed: any free port, for tests).
    public var address: (host: String, port: Int)? { Self.parse(listen) }

    static func parse(_ listen: String) -> (host: String, port: Int)? {
        guard let colon = listen.lastIndex(of: ":"), let port = Int(listen[listen.index(after: colon)...]),
              (0...65535).contains(port) else { return nil }
        var host = String(listen[..<colon])
        if host.hasPrefix("[") && host.hasSuffix("]") { host = String(host.dropFirst().dropLast()) }
        guard !host.isEmpty, host.contains(":") == listen.hasPrefix("[") else { return nil }
        return (host, port)
    }

    /// True for 127.0.0.0/8, ::1 and "localhost": only this machine can connect. Addresses are
    /// read as addresses (`127.0.0.1.example.com` is a name, and not loopback).
    public static func isLoopback(_ host: String) -> Bool { LoopbackHost.contains(host) }

    /// What is wrong with `listen` for a server without a token (`vigil demo --listen`); nil: nothing.
    public static func problemWithoutToken(listen: String) -> String? {
        if listen.isEmpty { return nil }
        guard let address = parse(listen) else { return "\"\(listen)\" is not HOST:PORT (e.g. 127.0.0.1:8080, or \"\" for no web server)" }
        return isLoopback(address.host) ? nil : "\(listen) is reachable from other machines; without a token only loopback is allowed (use a configuration file with token_file)"
    }

    /// The address a person opens ("http://127.0.0.1:8080"); 0.0.0.0 and :: are shown as is.
    public var pageAddress: String { "http://\(listen)" }

    /// Reads a token file: its first line, at least 16 characters, in a file that other users
    /// can neither read nor write (its group may read it: `root:vigil`, mode 0640). Like OpenSSH
    /// with a private key, Vigil refuses a token others can read rather than warn: anyone on the
    /// machine who reads it can watch every camera. Throws a message that says what is wrong and
    /// how to make one.
    public static func readToken(_ path: String) throws(TokenError) -> String {
        let text = try readPrivateFile(path, what: "token_file", secret: "it can watch every camera")
        let token = text.split(separator: "\n").first.map { $0.trimmingCharacters(in: .whitespaces) } ?? ""
        guard token.count >= 16 else {
            throw TokenError(description: token.isEmpty ? "token_file \(path) is empty" : "the token in \(path) is too short (\(token.count) characters; at least 16)")
        }
        return token
    }

    /// The first 4 KiB of a file that holds a secret, refused when other users can read or
    /// change it (`what` names the key, `secret` what a reader could do).
    static func readPrivateFile(_ path: String, what: String, secret: String) throws(TokenError) -> String {
        let fd = open(path, O_RDONLY | O_CLOEXEC)
        guard fd >= 0 else {
            throw TokenError(description: "cannot read \(what) \(path): \(String(cString: strerror(errno)))")
        }
        var st = stat()
        if fstat(fd, &st) == 0, st.st_mode & (S_IROTH | S_IWOTH | S_IWGRP) != 0 {
            close(fd)
            throw TokenError(description: "\(what) \(path) can be read or changed by other users (mode \(String(st.st_mode & 0o777, radix: 8))); anyone who reads it \(secret)")
        }
        let data = (try? FileHandle(fileDescriptor: fd, closeOnDealloc: true).read(upToCount: 4096)) ?? Data()
        return String(decoding: data, as: UTF8.self)
    }

    public struct TokenError: Error, CustomStringConvertible {
        public let description: String
    }
}

extension ConfigurationDecoder {
    /// `[http]`: listen, token_file, the limits and allowed_hosts; a non-loopback address
    /// without a token is an error, as is a token file that cannot be read or that others can.
    mutating func decodeHTTP(_ top: inout Reader) -> HTTPSettings {
        var settings = HTTPSettings()
        guard var http = table(&top, "http") else { return settings }
        let listen = string(&http, "listen")
        if let listen {
            settings.listen = listen.value
            if !listen.value.isEmpty && settings.address == nil {
                report(listen.line, "listen \"\(listen.value)\" is not HOST:PORT",
                       fix: "write e.g. listen = \"127.0.0.1:8080\" (\"[::1]:8080\" for IPv6), or \"\" for no web server")
            }
        }
        if let file = string(&http, "token_file") {
            settings.tokenFile = file.value
            do {
                settings.token = try HTTPSettings.readToken(file.value)
            } catch {
                report(file.line, error.description, fix: "chmod 600 \(file.value) (or 640 with the group vigil runs as), or make one: \(HTTPSettings.tokenRecipe)")
            }
        }
        if let n = integer(&http, "max_live_clients", in: 0...10_000) { settings.maxLiveClients = n }
        if let n = integer(&http, "max_clips", in: 0...64) { settings.maxClips = n }
        if let n = integer(&http, "max_connections", in: 16...1_000_000) { settings.maxConnections = n }
        if let n = integer(&http, "max_connections_per_client", in: 1...1_000_000) { settings.maxConnectionsPerClient = n }
        if let n = integer(&http, "idle_timeout_seconds", in: 1...3600) { settings.idleTimeoutSeconds = n }
        if let n = integer(&http, "header_timeout_seconds", in: 1...600) { settings.headerTimeoutSeconds = n }
        if let hosts = hostList(&http, "allowed_hosts") { settings.allowedHosts = hosts }
        if let n = integer(&http, "session_idle_hours", in: 1...8760) { settings.sessionIdleHours = n }
        if let n = integer(&http, "session_days", in: 1...3650) { settings.sessionDays = n }
        if let n = integer(&http, "audit_days", in: 1...36500) { settings.auditDays = n }
        if let proxies = hostList(&http, "trusted_proxies") {
            settings.trustedProxies = proxies
            // Behind a proxy even a loopback listener serves other machines, and without
            // token_file it would ask nobody anything the moment no user is left (all removed,
            // or an index rebuilt from the files).
            if !proxies.isEmpty && settings.tokenFile == nil {
                report(http.line, "trusted_proxies is set but token_file is not: behind a reverse proxy the page is reachable from other machines",
                       fix: "add token_file = \"/etc/vigil/token\" to [http] and make the token: \(HTTPSettings.tokenRecipe)")
            }
        }
        if let address = settings.address, !HTTPSettings.isLoopback(address.host), settings.tokenFile == nil {
            report(listen?.line ?? http.line,
                   "listen \"\(settings.listen)\" is reachable from other machines, and without a token anyone there could watch every camera and download every recording",
                   fix: "add token_file = \"/etc/vigil/token\" to [http] and make the token: \(HTTPSettings.tokenRecipe); or listen on 127.0.0.1")
        }
        unknown(http, HTTPSettings.keys)
        return settings
    }

    /// `allowed_hosts`: host names as a browser sends them in `Host` (no port, no scheme).
    private mutating func hostList(_ r: inout Reader, _ key: String) -> [String]? {
        guard let node = r.take(key) else { return nil }
        let fix = "write \(key) = [\"vigil.local\", \"192.168.1.5\"]: names or addresses, without http:// or a port"
        guard case .array(let items) = node.value else {
            report(node.line, "\(key) must be a list of host names, got \(node.typeName)", fix: fix)
            return nil
        }
        var hosts: [String] = []
        for item in items {
            guard case .string(let text) = item.value else {
                report(item.line, "\(key) must hold host names in quotes, got \(item.typeName)", fix: fix)
                continue
            }
            guard let host = WebAuthority.hostName(text) else {
                report(item.line, "\(key): \"\(ConfigurationDecoder.shortened(text))\" is not a host name", fix: fix)
                continue
            }
            hosts.append(host)
        }
        return hosts
    }
}

extension HTTPSettings: CustomDebugStringConvertible {
    /// Printed as a part of a value printed whole (swift-service-lifecycle's debug log prints
    /// the web server service), without the token.
    public var debugDescription: String {
        "HTTPSettings(listen: \"\(listen)\", tokenFile: \(tokenFile.map { "\"\($0)\"" } ?? "nil"), token: \(token == nil ? "nil" : "***"), maxLiveClients: \(maxLiveClients))"
    }
}
