import Foundation
import HTTPTypes
import Hummingbird
import HummingbirdWSClient
import HummingbirdWebSocket
import Logging
import Recorder

/// Live view of a camera another node records, through this node: the WebSocket
/// `/api/v1/cluster/cameras/{name}/live` (fragmented MP4, an H.264 camera) relays the holder's
/// `/api/v1/cameras/{name}/live` message by message, and `…/live.mjpeg` streams the holder's
/// JPEGs. Each holds one of this node's `max_live_clients` places while it lasts (and one of the
/// holder's, as any viewer there). The holder is asked with the site's token; a viewer that
/// goes away ends the relay, and the holder's end (its camera lost, the camera moved) ends the
/// viewer's, which the page opens again.
extension ClusterRoutes {
    /// The largest message relayed: a keyframe's fragment of a 4K camera fits many times.
    static let maxLiveMessage = 16 << 20

    func addLive(to router: Router<WebRequestContext>) {
        router.get("/api/v1/cluster/cameras/:name/live.mjpeg") { request, context in
            let (name, holder) = try await holder(context)
            guard let place = clients.take() else { throw LiveRoutes.full(clients.limit) }
            return try await forward(request, to: holder.address, node: holder.node, path: "/api/v1/cameras/\(ApiRoutes.pathComponent(name))/live.mjpeg",
                                     keeping: place)
        }
        router.ws("/api/v1/cluster/cameras/:name/live") { request, context in
            let (_, holder) = try await holder(context)
            return try LiveRoutes.upgrade(request, clients: clients, otherwise: "open it with new WebSocket(\"ws://…\"); it is relayed from \(holder.node)")
        } onUpgrade: { inbound, outbound, context in
            guard let place = try await LiveRoutes.place(clients, outbound) else { return }
            defer { withExtendedLifetime(place) {} }
            guard let (name, holder) = try? await holder(context.requestContext) else { return }
            try await relay(name, from: holder, to: outbound, viewer: inbound)
        }
    }

    /// The node that records the camera of the path now, with a web server; 404 when none does.
    private func holder(_ context: WebRequestContext) async throws(APIError) -> (String, HeldCamera) {
        let name = try RequestValues.cameraName(context)
        guard let holder = try await read({ try $0.heldCameras() }).first(where: { $0.camera == name && $0.node != site.node }) else {
            throw APIError(.notFound, "no other node records camera \(name) now")
        }
        return (name, holder)
    }

    /// Messages of the holder's live WebSocket passed to `outbound` as they come, until either
    /// side ends: the viewer's one message ("close") or its close ends the relay at once.
    private func relay(_ name: String, from holder: HeldCamera, to outbound: WebSocketOutboundWriter, viewer: WebSocketInboundStream) async throws {
        guard var url = URLComponents(string: holder.address), ["http", "https"].contains(url.scheme), url.host != nil else {
            try await outbound.close(.unexpectedServerError, reason: "node \(holder.node) serves no web page")
            return
        }
        url.scheme = url.scheme == "https" ? "wss" : "ws"
        var headers = HTTPFields()
        if let token { headers[.authorization] = "Bearer \(token)" }
        headers[Self.forwardedBy] = site.node
        let configuration = WebSocketClientConfiguration(maxFrameSize: Self.maxLiveMessage, additionalHeaders: headers)
        let address = (url.string ?? "") + "/api/v1/cameras/\(ApiRoutes.pathComponent(name))/live"
        try await withThrowingTaskGroup(of: Void.self) { group in
            group.addTask {
                _ = try await WebSocketClient.connect(url: address, configuration: configuration, logger: Self.relayLogger) { upstream, _, _ in
                    for try await message in upstream.messages(maxSize: Self.maxLiveMessage) {
                        switch message {
                        case .binary(let bytes): try await outbound.write(.binary(bytes))
                        case .text(let text): try await outbound.write(.text(text))
                        }
                    }
                }
            }
            group.addTask {
                for try await _ in viewer { break }
            }
            // Whichever ends first ends both.
            _ = try await group.next()
            group.cancelAll()
        }
    }

    /// The client library's own lines (connections, frames) are not Vigil's to say.
    private static let relayLogger: Logger = {
        var logger = Logger(label: "vigil.http.live-relay")
        logger.logLevel = .error
        return logger
    }()
}
