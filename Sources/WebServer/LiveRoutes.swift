import Capture
import Foundation
import Hummingbird
import HummingbirdWebSocket
import NIOCore
import Recorder
import ServiceLifecycle

/// Live view: `snapshot.jpg` (the latest frame, from memory), `live.mjpeg` (multipart JPEGs,
/// one shared stream per camera) and the WebSocket `live` (fragmented MP4 for H.264 cameras).
/// What a viewer costs the camera is bounded by `LiveOutput`/`LiveViewer`; here each viewer
/// only waits for its next message and writes it, at the pace its client reads.
///
/// A viewer holds one of `max_live_clients` places (`Places`) only while it streams, and gives
/// it back on every way out. Its socket's send buffer is kept small, so that a client that stops
/// reading is seen within seconds (its connection stays unwritable, and `ConnectionGuard` closes
/// it after `idle_timeout_seconds`) and one that reads slowly gets recent frames, not old ones.
struct LiveRoutes: Sendable {
    let feeds: LiveFeeds
    let clients: Places

    /// The send buffer of a live viewer's socket: about a second of 640x480 MJPEG.
    static let sendBufferBytes = 65_536

    func add(to router: Router<WebRequestContext>) {
        addSnapshot(to: router)
        addMJPEG(to: router)
        addWebSocket(to: router)
    }

    /// `snapshot.jpg`: the latest frame, or 503 while there is none.
    private func addSnapshot(to router: Router<WebRequestContext>) {
        router.get("/api/v1/cameras/:name/snapshot.jpg") { _, context in
            let (name, live) = try output(context)
            let image: LiveImage
            do {
                image = try await live.snapshot()
            } catch {
                throw APIError(.serviceUnavailable, "camera \(name) has no live frame now (not recording, or just starting): \(error)")
            }
            return Response(
                status: .ok, headers: [.contentType: "image/jpeg", .cacheControl: "no-store"],
                body: .init(byteBuffer: ByteBuffer(bytes: image.data)))
        }
    }

    /// `live.mjpeg`: multipart JPEGs, for as long as the client reads.
    private func addMJPEG(to router: Router<WebRequestContext>) {
        router.get("/api/v1/cameras/:name/live.mjpeg") { _, context in
            let (name, live) = try output(context)
            let place = try claim()
            guard let viewer = live.mjpegViewer() else {
                throw APIError(.notFound, "camera \(name) sends H.264 only: watch it through the WebSocket /api/v1/cameras/\(name)/live")
            }
            let channel = context.channel
            let body = ResponseBody { writer in
                // Held until the stream ends (the response is dropped with it if it never starts).
                withExtendedLifetime(place) {}
                defer { viewer.close() }
                await Self.keepSendBufferSmall(channel)
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
    }

    /// `live`: the WebSocket of fragmented MP4 for an H.264 camera; a viewer's place is taken
    /// only once the upgrade is done.
    private func addWebSocket(to router: Router<WebRequestContext>) {
        router.ws("/api/v1/cameras/:name/live") { request, context in
            let (name, live) = try output(context)
            guard live.mp4.isH264 == true else {
                throw APIError(.notFound, "camera \(name) has no H.264 live stream: use live.mjpeg")
            }
            return try Self.upgrade(request, clients: clients, otherwise: "open it with new WebSocket(\"ws://…\"), or watch /api/v1/cameras/\(name)/live.mjpeg")
        } onUpgrade: { inbound, outbound, context in
            guard let place = try await Self.place(clients, outbound) else { return }
            defer { withExtendedLifetime(place) {} }
            guard let viewer = (try? output(context.requestContext))?.1.mp4Viewer() else { return }
            defer { viewer.close() }
            await Self.keepSendBufferSmall(context.requestContext.channel)
            // The viewer sends nothing but, when it leaves, one message ("close"): that, its close
            // or its connection's end ends the stream at once. Ended here, the server's close
            // frame is the last thing sent (a browser's own close can cross a fragment in flight).
            try await withThrowingTaskGroup(of: Void.self) { group in
                group.addTask {
                    for try await _ in inbound { break }
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

    /// The camera the path names and its live output, or 404.
    private func output(_ context: WebRequestContext) throws(APIError) -> (String, LiveOutput) {
        let name = try RequestValues.cameraName(context)
        guard let live = feeds.output(camera: name) else { throw APIError.unknownCamera(name) }
        return (name, live)
    }

    private func claim() throws(APIError) -> Place {
        guard let place = clients.take() else { throw Self.full(clients.limit) }
        return place
    }

    /// A live WebSocket's request before its upgrade: a plain GET is not a viewer and takes no
    /// place (it used to take one for good), 426 saying `otherwise`; a full house is told 503
    /// here, before the upgrade (the place is taken after it, by `place`).
    static func upgrade(_ request: Request, clients: Places, otherwise: String) throws(APIError) -> RouterShouldUpgrade {
        guard request.headers[.upgrade]?.lowercased() == "websocket" else {
            throw APIError(.init(code: 426, reasonPhrase: "Upgrade Required"), "this is a WebSocket of a camera's live view: \(otherwise)")
        }
        guard clients.count < clients.limit else { throw Self.full(clients.limit) }
        return .upgrade([:])
    }

    /// A viewer's place once its WebSocket is open; nil when the house filled meanwhile (the
    /// socket is closed saying so).
    static func place(_ clients: Places, _ outbound: WebSocketOutboundWriter) async throws -> Place? {
        guard let place = clients.take() else {
            try await outbound.close(.unknown(1013), reason: "too many live viewers (max_live_clients = \(clients.limit))")
            return nil
        }
        return place
    }

    static func full(_ limit: Int) -> APIError {
        APIError(.serviceUnavailable, "too many live viewers (max_live_clients = \(limit)); close one or raise [http] max_live_clients")
    }

    static func keepSendBufferSmall(_ channel: any Channel) async {
        try? await channel.setOption(ChannelOptions.socketOption(.so_sndbuf), value: ChannelOptions.Types.SocketOption.Value(sendBufferBytes)).get()
    }
}
