import Hummingbird

/// A WebSocket upgrade that a route or a check refuses (no token, a foreign `Origin` or `Host`,
/// no such camera, no free place) would be answered by SwiftNIO's upgrader with a bare 400,
/// whatever the reason. This answers it as every other request is answered, with its status and
/// `{"error": …}`, on the connection itself (`ConnectionGuard`), before the upgrader's 400.
struct UpgradeRefusalMiddleware: RouterMiddleware {
    typealias Context = WebRequestContext

    func handle(_ request: Request, context: Context, next: (Request, Context) async throws -> Response) async throws -> Response {
        do {
            return try await next(request, context)
        } catch let error as APIError {
            // Hummingbird sends an ordinary request that asks for an upgrade elsewhere (a redirect
            // to a fresh connection): one that gets here with the header is the upgrade itself.
            if request.headers[.upgrade]?.lowercased() == "websocket" {
                await ConnectionGuard.respond(on: context.channel, status: Int(error.status.code), error.status.reasonPhrase, error.message)
            }
            throw error
        }
    }
}
