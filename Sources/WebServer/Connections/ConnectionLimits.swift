import Hummingbird
import HummingbirdCore
import HummingbirdWebSocket
import NIOCore
import Recorder

/// The limits a production HTTP server puts on its connections, from `[http]` and the
/// open-file limit, and the server (HTTP/1 with the WebSocket upgrade) that applies them:
///
/// | limit | where |
/// |---|---|
/// | connections in all: `max_connections`, at most what `OpenFileLimit` leaves the web server | `MaximumAvailableConnections` stops accepting (the kernel's backlog holds the rest; no descriptor is opened) |
/// | connections per client address: `max_connections_per_client` | `ConnectionGuard`: 503 and closed |
/// | the first request's head within `header_timeout_seconds` | `ConnectionGuard`: 408 and closed (silently when nothing came) |
/// | nothing in progress, or the next head, within `idle_timeout_seconds` | Hummingbird's idle timeout |
/// | a body within `header_timeout_seconds` of its head, at most 64 KiB | `RequestBodyGuard` |
/// | a client that takes none of its answer for `idle_timeout_seconds` | `ConnectionGuard` |
/// | a head over 8 KiB a line, 16 KiB in all, 100 fields; anything that does not parse | SwiftNIO's parser; `FirstRequestErrors` or Hummingbird answer 431/400 |
/// | a WebSocket peer that answers no ping for `idle_timeout_seconds` | hummingbird-websocket's auto-ping |
struct ConnectionLimits: Sendable {
    /// The open-file limit the connection cap was derived from.
    let openFiles: Int
    let connections: Int
    let perClient: Int
    let timeouts: ConnectionGuard.Timeouts

    static let maxHeaderFieldSize = 8192
    static let maxHeaderListSize = 16_384
    static let maxHeaderFieldCount = 100

    init(settings: HTTPSettings, openFiles: Int) {
        self.openFiles = openFiles
        connections = min(settings.maxConnections, OpenFileLimit.webConnections(limit: openFiles))
        perClient = settings.maxConnectionsPerClient
        timeouts = .init(header: .seconds(Int64(settings.headerTimeoutSeconds)), idle: .seconds(Int64(settings.idleTimeoutSeconds)))
    }

    /// HTTP/1 with the WebSocket upgrade (answered by `webSocketRouter`), each connection guarded.
    func server(webSocketRouter: Router<WebRequestContext>) -> HTTPServerBuilder {
        let table = ConnectionTable(perClient: perClient)
        let timeouts = self.timeouts
        let webSocketResponder = webSocketRouter.buildResponder()
        let decoder = HTTP1Channel.Configuration.DecoderConfiguration(
            maxHeaderFieldSize: Self.maxHeaderFieldSize, maxHeaderListSize: Self.maxHeaderListSize, maxHeaderFieldCount: Self.maxHeaderFieldCount)
        let configuration = HTTP1WebSocketUpgradeChannel.Configuration(
            http1: .init(additionalChannelHandlers: [RequestBodyGuard(timeout: timeouts.header)], idleTimeout: timeouts.idle, httpDecoderConfiguration: decoder),
            ws: .init(autoPing: .enabled(timePeriod: .nanoseconds(timeouts.idle.nanoseconds))))
        return HTTPServerBuilder { responder in
            GuardedChannel(
                inner: HTTP1WebSocketUpgradeChannel(responder: responder, webSocketResponder: webSocketResponder, configuration: configuration),
                table: table, timeouts: timeouts)
        }
    }
}
