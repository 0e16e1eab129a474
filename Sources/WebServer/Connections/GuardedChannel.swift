import HummingbirdCore
import Logging
import NIOCore
import NIOHTTP1

/// A server's child channel (`inner`: HTTP/1 with the WebSocket upgrade) with a
/// `ConnectionGuard` in front of everything and a `FirstRequestErrors` behind the HTTP parser.
struct GuardedChannel<Inner: ServerChildChannel>: ServerChildChannel {
    let inner: Inner
    let table: ConnectionTable
    let timeouts: ConnectionGuard.Timeouts

    func setup(channel: any Channel, logger: Logger) -> EventLoopFuture<Inner.Value> {
        do {
            try channel.pipeline.syncOperations.addHandler(ConnectionGuard(table: table, timeouts: timeouts), position: .first)
        } catch {
            return channel.eventLoop.makeFailedFuture(error)
        }
        let value = inner.setup(channel: channel, logger: logger)
        // The inner pipeline is laid out by now (setup runs on the channel's event loop); the
        // watcher goes after it, before what the upgrade decision adds.
        return value.flatMapThrowing { value in
            let guarding = try channel.pipeline.syncOperations.handler(type: ConnectionGuard.self)
            try channel.pipeline.syncOperations.addHandler(FirstRequestErrors(guarding: guarding))
            return value
        }
    }

    /// Hummingbird logs a connection that ended before its first request (one the guard closed,
    /// or garbage) as an error of the server: here that is an ordinary client, not news.
    func handle(value: Inner.Value, logger: Logger) async {
        var quiet = logger
        quiet.logLevel = .critical
        await inner.handle(value: value, logger: quiet)
    }
}

/// Until the first request is handed on, nobody answers a parse error: the upgrade handler
/// passes it along and the connection would stay open with no reply. This answers 400 (431 for
/// a head over the size limits) through the guard and closes. It leaves at the first message it
/// passes on; later parse errors are Hummingbird's, which answers 400 itself. It never looks
/// inside what it passes on (HTTP parts, or WebSocket bytes after an upgrade).
final class FirstRequestErrors: ChannelInboundHandler, RemovableChannelHandler {
    typealias InboundIn = Any
    typealias InboundOut = Any

    private let guarding: ConnectionGuard

    init(guarding: ConnectionGuard) { self.guarding = guarding }

    func channelRead(context: ChannelHandlerContext, data: NIOAny) {
        context.fireChannelRead(data)
        context.pipeline.syncOperations.removeHandler(context: context, promise: nil)
    }

    func errorCaught(context: ChannelHandlerContext, error: any Error) {
        guard let error = error as? HTTPParserError, let guardContext = try? context.pipeline.syncOperations.context(handler: guarding) else {
            context.fireErrorCaught(error)
            return
        }
        if error == .headerOverflow {
            guarding.respond(guardContext, status: 431, "Request Header Fields Too Large", "the request's head is larger than Vigil accepts (16 KiB)")
        } else {
            guarding.respond(guardContext, status: 400, "Bad Request", "not an HTTP/1.1 request (\(error))")
        }
    }
}
