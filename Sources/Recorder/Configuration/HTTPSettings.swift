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

    public static let defaultListen = "127.0.0.1:8080"
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

    /// True for 127.0.0.0/8, ::1 and "localhost": only this machine can connect.
    static func isLoopback(_ host: String) -> Bool {
        host == "localhost" || host == "::1" || host.hasPrefix("127.")
    }

    /// What is wrong with `listen` for a server without a token (`vigil demo --listen`); nil: nothing.
    public static func problemWithoutToken(listen: String) -> String? {
        if listen.isEmpty { return nil }
        guard let address = parse(listen) else { return "\"\(listen)\" is not HOST:PORT (e.g. 127.0.0.1:8080, or \"\" for no web server)" }
        return isLoopback(address.host) ? nil : "\(listen) is reachable from other machines; without a token only loopback is allowed (use a configuration file with token_file)"
    }

    /// The address a person opens ("http://127.0.0.1:8080"); 0.0.0.0 and :: are shown as is.
    public var pageAddress: String { "http://\(listen)" }

    /// Reads a token file: its first line, at least 16 characters. Throws a message that says
    /// what is wrong and how to make one.
    public static func readToken(_ path: String) throws(TokenError) -> String {
        let fd = open(path, O_RDONLY | O_CLOEXEC)
        guard fd >= 0 else {
            throw TokenError(description: "cannot read token_file \(path): \(String(cString: strerror(errno)))")
        }
        let data = FileHandle(fileDescriptor: fd, closeOnDealloc: true).readDataToEndOfFile()
        let token = String(decoding: data.prefix(4096), as: UTF8.self).split(separator: "\n").first
            .map { $0.trimmingCharacters(in: .whitespaces) } ?? ""
        guard token.count >= 16 else {
            throw TokenError(description: token.isEmpty ? "token_file \(path) is empty" : "the token in \(path) is too short (\(token.count) characters; at least 16)")
        }
        return token
    }

    public struct TokenError: Error, CustomStringConvertible {
        public let description: String
    }
}

extension ConfigurationDecoder {
    /// `[http]`: listen, token_file, max_live_clients; a non-loopback address without a token is
    /// an error, as is a token file that cannot be read.
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
                report(file.line, error.description, fix: "make one: \(HTTPSettings.tokenRecipe)")
            }
        }
        if let n = integer(&http, "max_live_clients", in: 0...10_000) { settings.maxLiveClients = n }
        if let address = settings.address, !HTTPSettings.isLoopback(address.host), settings.tokenFile == nil {
            report(listen?.line ?? http.line,
                   "listen \"\(settings.listen)\" is reachable from other machines, and without a token anyone there could watch every camera and download every recording",
                   fix: "add token_file = \"/etc/vigil/token\" to [http] and make the token: \(HTTPSettings.tokenRecipe); or listen on 127.0.0.1")
        }
        unknown(http, ["listen", "token_file", "max_live_clients"])
        return settings
    }
}

extension HTTPSettings: CustomDebugStringConvertible {
    /// Printed as a part of a value printed whole (swift-service-lifecycle's debug log prints
    /// the web server service), without the token.
    public var debugDescription: String {
        "HTTPSettings(listen: \"\(listen)\", tokenFile: \(tokenFile.map { "\"\($0)\"" } ?? "nil"), token: \(token == nil ? "nil" : "***"), maxLiveClients: \(maxLiveClients))"
    }
}
