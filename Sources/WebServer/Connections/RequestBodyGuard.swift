import NIOCore
import NIOHTTPTypes

/// A request's body, as HTTP parts: it must be complete within `timeout` of its head and hold at
/// most `maxBytes`, or the connection is closed. Only `POST /login` reads a body (4 KiB); every
/// other route leaves it to be drained, and a body that never ends (or trickles in a byte at a
/// time, which keeps Hummingbird's idle timer from firing) would keep a connection forever.
final class RequestBodyGuard: ChannelInboundHandler, RemovableChannelHandler {
    typealias InboundIn = HTTPRequestPart
    typealias InboundOut = HTTPRequestPart

    static let maxBytes = 65_536

    private let timeout: TimeAmount
    private var deadline: Scheduled<Void>?
    private var bytes = 0

    init(timeout: TimeAmount) { self.timeout = timeout }

    func channelRead(context: ChannelHandlerContext, data: NIOAny) {
        switch unwrapInboundIn(data) {
        case .head:
            bytes = 0
            deadline?.cancel()
            deadline = context.eventLoop.assumeIsolated().scheduleTask(in: timeout) { context.close(promise: nil) }
        case .body(let part):
            bytes += part.readableBytes
            if bytes > Self.maxBytes {
                context.close(promise: nil)
                return
            }
        case .end:
            deadline?.cancel()
            deadline = nil
        }
        context.fireChannelRead(data)
    }

    func channelInactive(context: ChannelHandlerContext) {
        deadline?.cancel()
        context.fireChannelInactive()
    }
}
