import Capture
import Foundation
import Hummingbird
import HummingbirdWebSocket
import Recorder
import ServiceLifecycle

/// Live view: `snapshot.jpg` (the latest frame, from memory), `live.mjpeg` (multipart JPEGs,
/// one shared stream per camera) and the WebSocket `live` (fragmented MP4 for H.264 cameras).
/// What a viewer costs the camera is bounded by `LiveOutput`/`LiveViewer`; here each viewer
/// only waits for its next message and writes it, at the pace its client reads.
struct LiveRoutes: Sendable {
    let feeds: LiveFeeds
    let clients: LiveClients

    func add(to router: Router<WebRequestContext>) {
        router.get("/api/v1/cameras/:name/snapshot.jpg") { _, context in
            let live = try output(context)
            let image: LiveImage
            do {
                image = try await live.snapshot()
            } catch {
                throw APIError(.serviceUnavailable, "camera \(try context.parameters.require("name")) has no live frame now (not recording, or just starting): \(error)")
            }
            return Response(
                status: .ok, headers: [.contentType: "image/jpeg", .cacheControl: "no-store"],
                body: .init(byteBuffer: ByteBuffer(bytes: image.data)))
        }

        router.get("/api/v1/cameras/:name/live.mjpeg") { _, context in
            let live = try output(context)
            let name = try context.parameters.require("name")
            try claim()
            guard let viewer = live.mjpegViewer() else {
                clients.closed()
                throw APIError(.notFound, "camera \(name) sends H.264 only: watch it through the WebSocket /api/v1/cameras/\(name)/live")
            }
            let body = ResponseBody { writer in
                defer {
                    viewer.close()
                    clients.closed()
                }
                // A stream never ends by itself: at shutdown the viewer is closed, or the server
                // would wait for it (and vigil with it) as long as the client watches.
                try await withGracefulShutdownHandler {
                    while let message = await viewer.next() {
                        guard case .data(let jpeg) = message else { continue }
                        var part = ByteBuffer()
                        part.reserveCapacity(jpeg.count + 96)
                        part.writeString("--frame\r\nContent-Type: image/jpeg\r\nContent-Length: \(jpeg.count)\r\n\r\n")
                        part.writeBytes(jpeg)
                        part.writeString("\r\n")
                        try await writer.write(part)
                    }
                } onGracefulShutdown: {
                    viewer.close()
                }
                try await writer.finish(nil)
            }
            return Response(
                status: .ok,
                headers: [.contentType: "multipart/x-mixed-replace; boundary=frame", .cacheControl: "no-store"],
                body: body)
        }

        router.ws("/api/v1/cameras/:name/live") { request, context in
            guard Self.isSameOrigin(request) else {
                throw APIError(.forbidden, "WebSocket refused: Origin \(request.headers[.origin] ?? "") is not this server")
            }
            let live = try output(context)
            guard live.mp4.isH264 == true else {
                throw APIError(.notFound, "camera \(try context.parameters.require("name")) has no H.264 live stream: use live.mjpeg")
            }
            try claim()
            return .upgrade([:])
        } onUpgrade: { inbound, outbound, context in
            // Claimed by the upgrade above, released when this viewer ends.
            defer { clients.closed() }
            guard let live = try? output(context.requestContext), let viewer = live.mp4Viewer() else { return }
            defer { viewer.close() }
            // The viewer sends nothing; its close (or its connection's end) ends the stream at once.
            try await withThrowingTaskGroup(of: Void.self) { group in
                group.addTask {
                    for try await _ in inbound {}
                    viewer.close()
                }
                try await withGracefulShutdownHandler {
                    try await send(viewer, to: outbound)
                } onGracefulShutdown: {
                    viewer.close()
                }
                group.cancelAll()
            }
        }
    }

    private func send(_ viewer: LiveViewer, to outbound: WebSocketOutboundWriter) async throws {
        while let message = await viewer.next() {
            switch message {
            case .data(let bytes): try await outbound.write(.binary(ByteBuffer(bytes: bytes)))
            case .skipped(let n): try await outbound.write(.text("{\"skipped\":\(n)}"))
            }
        }
    }

    private func output(_ context: WebRequestContext) throws -> LiveOutput {
        let name = try context.parameters.require("name")
        guard let live = feeds.output(camera: name) else { throw APIError.unknownCamera(name) }
        return live
    }

    private func claim() throws(APIError) {
        guard clients.claim() else {
            throw APIError(.serviceUnavailable, "too many live viewers (max_live_clients = \(clients.limit)); close one or raise [http] max_live_clients")
        }
    }

    /// A browser names the page that opens a WebSocket in `Origin`: only pages from this
    /// server's host may watch (another site open in the same browser must not). The host is
    /// compared, not the port: WebSocket clients send `ws://HOST` without one. Clients that send
    /// no Origin (scripts) are not browsers and are let through; authentication still applies.
    ///
    /// A refused upgrade is answered by SwiftNIO's upgrader with 400 (it allows no other status);
    /// the same request without upgrade headers gets 403 and the JSON error.
    static func isSameOrigin(_ request: Request) -> Bool {
        let origins = request.headers[values: .origin]
        guard !origins.isEmpty else { return true }
        guard let authority = request.head.authority, let server = URL(string: "http://\(authority)")?.host?.lowercased() else { return false }
        return origins.allSatisfy { URL(string: $0)?.host?.lowercased() == server }
    }
}
