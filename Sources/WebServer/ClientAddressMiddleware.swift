import Foundation
import Hummingbird

/// Who the client is for the login throttle and the audit trail, and whether it came over
/// https: the connection's peer, unless that peer is one of `[http] trusted_proxies`, whose
/// `X-Forwarded-For` (its last address: the one the proxy itself saw) and
/// `X-Forwarded-Proto` are then believed. Anyone else's forwarded headers are ignored, so a
/// client cannot pick the address it is throttled and audited under.
struct ClientAddressMiddleware: RouterMiddleware {
    typealias Context = WebRequestContext
    let trusted: Set<String>

    init(trustedProxies: [String]) {
        trusted = Set(trustedProxies.map(Self.bare))
    }

    func handle(_ request: Request, context: Context, next: (Request, Context) async throws -> Response) async throws -> Response {
        guard trusted.contains(Self.bare(context.clientAddress)) else { return try await next(request, context) }
        var context = context
        if let forwarded = request.headers[.xForwardedFor]?.split(separator: ",").last.map({ Self.bare(String($0)) }),
           Self.isAddress(forwarded) {
            context.clientAddress = forwarded
        }
        context.viaHTTPS = request.headers[.xForwardedProto]?.split(separator: ",").last?.trimmingCharacters(in: .whitespaces).lowercased() == "https"
        return try await next(request, context)
    }

    /// An address without spaces or IPv6 brackets.
    static func bare(_ text: String) -> String {
        var text = text.trimmingCharacters(in: .whitespaces)
        if text.hasPrefix("[") && text.hasSuffix("]") { text = String(text.dropFirst().dropLast()) }
        return text
    }

    /// True for an IPv4 or IPv6 address as written (never a name, never with a port).
    static func isAddress(_ text: String) -> Bool {
        var v4 = in_addr(), v6 = in6_addr()
        return text.count <= 45 && (inet_pton(AF_INET, text, &v4) == 1 || inet_pton(AF_INET6, text, &v6) == 1)
    }
}

extension HTTPFields.Element.Name {
    static let xForwardedFor = Self("X-Forwarded-For")!
    static let xForwardedProto = Self("X-Forwarded-Proto")!
}
