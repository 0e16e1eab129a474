import Foundation
import HTTPTypes
import Hummingbird
import HummingbirdWSClient
import HummingbirdWebSocket
import Logging
import Recorder
import ServiceLifecycle
import Synchronization

/// Live view of an H.264 camera another node records, through this node: the WebSocket
/// `/api/v1/cluster/cameras/{name}/live` relays the holder's `/api/v1/cameras/{name}/live`
/// (fragmented MP4) message by message. It holds one of this node's `max_live_clients` places
/// while it lasts (and one of the holder's, as any viewer there). The holder is asked with the
/// site's token; a viewer that goes away ends the relay, the holder's end (its camera lost, the
/// camera moved) ends the viewer's, which the page opens again, and so does this node's
/// shutdown (a relay left open would hold the web server, and the hand-over after it, until
/// systemd's kill). An MJPEG camera elsewhere shows its refreshed snapshot instead.
extension ClusterRoutes {
    /// The largest message relayed: a keyframe's fragment of a 4K camera fits many times.
    static let maxLiveMessage = 16 << 20

    func addLive(to router: Router<WebRequestContext>) {
        router.ws("/api/v1/cluster/cameras/:name/live") { request, context in
            let (_, holder) = try await holder(context)
            return try LiveRoutes.upgrade(request, clients: clients, otherwise: "open it with new WebSocket(\"ws://…\"); it is relayed from \(holder.node)")
        } onUpgrade: { inbound, outbound, context in
            guard let place = try await LiveRoutes.place(clients, outbound) else { return }
            defer { withExtendedLifetime(place) {} }
            guard let (name, holder) = try? await holder(context.requestContext) else { return }
            await LiveRoutes.keepSendBufferSmall(context.requestContext.channel)
            try await relay(name, from: holder, to: outbound, viewer: inbound)
        }
    }

    /// The node that records the camera of the path now; 404 when no other node does.
    private func holder(_ context: WebRequestContext) async throws(APIError) -> (String, HeldCamera) {
        let name = try RequestValues.cameraName(context)
        guard let holder = try await read({ try $0.heldCameras() }).first(where: { $0.camera == name && $0.node != site.node }) else {
            throw APIError(.notFound, "no other node records camera \(name) now")
        }
        return (name, holder)
    }

    /// Messages of the holder's live WebSocket passed to `outbound` as they come, until the
    /// holder ends, the viewer sends its one message ("close") or closes, or this node shuts
    /// down. A holder that refuses is said once in the log and in the close frame.
    private func relay(_ name: String, from holder: HeldCamera, to outbound: WebSocketOutboundWriter, viewer: WebSocketInboundStream) async throws {
        guard var url = URLComponents(string: holder.address), ["http", "https"].contains(url.scheme), url.host != nil, url.path.isEmpty else {
            try await outbound.close(.unexpectedServerError, reason: "node \(holder.node) serves no web page")
            return
        }
        url.scheme = url.scheme == "https" ? "wss" : "ws"
        var headers = HTTPFields()
        if let token { headers[.authorization] = "Bearer \(token)" }
        headers[Self.forwardedBy] = site.node
        let configuration = WebSocketClientConfiguration(maxFrameSize: Self.maxLiveMessage, additionalHeaders: headers)
        let address = (url.string ?? "") + "/api/v1/cameras/\(ApiRoutes.pathComponent(name))/live"
        let failure: String? = try await withThrowingTaskGroup(of: String?.self) { group in
            group.addTask {
                do {
                    _ = try await WebSocketClient.connect(url: address, configuration: configuration, logger: Self.relayLogger) { upstream, _, _ in
                        for try await message in upstream.messages(maxSize: Self.maxLiveMessage) {
                            switch message {
                            case .binary(let bytes): try await outbound.write(.binary(bytes))
                            case .text(let text): try await outbound.write(.text(text))
                            }
                        }
                    }
                    return nil
                } catch is CancellationError {
                    return nil
                } catch {
                    return "node \(holder.node) at \(holder.address) did not give camera \(name)'s live view: \(error)"
                }
            }
            group.addTask {
                for try await _ in viewer { break }
                return nil
            }
            group.addTask {
                try await gracefulShutdown()
                return nil
            }
            // Whichever ends first ends all three.
            let first = try await group.next() ?? nil
            group.cancelAll()
            return first
        }
        let key = holder.node + " " + name
        if let failure {
            // Said once until a relay of that camera from that node works again: the page tries
            // again every few seconds.
            if Self.said.withLock({ $0.count < 1000 && $0.insert(key).inserted }) { Self.logger.notice("\(failure)") }
            try? await outbound.close(.unexpectedServerError, reason: String(failure.prefix(120)))
        } else {
            Self.said.withLock { _ = $0.remove(key) }
        }
    }

    /// The relays whose failure was said (node and camera), at most 1,000.
    private static let said = Mutex<Set<String>>([])

    /// The client library's own lines (connections, frames) are not Vigil's to say.
    private static let relayLogger: Logger = {
        var logger = Logger(label: "vigil.http.live-relay")
        logger.logLevel = .error
        return logger
    }()

    private static let logger = Logger(label: "vigil.http")
}
