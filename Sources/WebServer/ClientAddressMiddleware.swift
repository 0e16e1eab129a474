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
        trusted = Set(trustedProxies.map(ForwardedFor.bare))
    }

    func handle(_ request: Request, context: Context, next: (Request, Context) async throws -> Response) async throws -> Response {
        guard trusted.contains(ForwardedFor.bare(context.clientAddress)) else { return try await next(request, context) }
        var context = context
        if let client = request.headers[.xForwardedFor].flatMap(ForwardedFor.client) { context.clientAddress = client }
        context.viaHTTPS = request.headers[.xForwardedProto].map(ForwardedFor.isHTTPS) ?? false
        return try await next(request, context)
    }
}

extension HTTPFields.Element.Name {
    static let xForwardedFor = Self("X-Forwarded-For")!
    static let xForwardedProto = Self("X-Forwarded-Proto")!
}
