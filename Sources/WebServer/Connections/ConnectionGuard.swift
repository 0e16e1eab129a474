import Foundation
import NIOCore
import Synchronization

/// Open connections per client address, shared by every connection of one server: one address
/// may hold `perClient` at once, so a single misbehaving client (or 1100 idle sockets from one
/// script) cannot take every place. The whole server's cap is Hummingbird's
/// `MaximumAvailableConnections`, which stops accepting rather than opening a descriptor.
final class ConnectionTable: Sendable {
    let perClient: Int
    private let counts = Mutex<[String: Int]>([:])

    init(perClient: Int) { self.perClient = perClient }

    /// Takes a place for `address`; false (and nothing taken) when it has `perClient` already.
    func open(_ address: String) -> Bool {
        counts.withLock { counts in
            let n = counts[address, default: 0]
            guard n < perClient else { return false }
            counts[address] = n + 1
            return true
        }
    }

    func close(_ address: String) {
        counts.withLock { counts in
            let n = counts[address, default: 0] - 1
            counts[address] = n > 0 ? n : nil
        }
    }

    /// Connections open now (tests).
    var total: Int { counts.withLock { $0.values.reduce(0, +) } }
}

/// The first handler of every connection, on its raw bytes, before HTTP is parsed: the limits
/// a production server puts on a connection before it knows what the client wants.
///
/// - A client address over its share (`ConnectionTable`) is answered 503 and closed at once.
/// - The first request's head must arrive within `headerTimeout` (slowloris: a header sent a
///   byte at a time; a socket that sends nothing; half a header; HTTP/0.9), and a client that
///   closes its side before it is complete is closed at once. Later requests are timed by
///   Hummingbird's idle timeout, which starts only once the first head is parsed.
/// - A client that takes none of its answer for `idleTimeout` (its socket stays unwritable: a
///   live viewer that stopped reading, a download nobody reads) is disconnected, which ends the
///   route's stream and frees what it held.
/// - `respond(…)` answers with a JSON error and closes, from here, below the HTTP encoders:
///   for a parse error before the first request, and for a refused WebSocket upgrade (which
///   SwiftNIO would answer with a bare 400).
final class ConnectionGuard: ChannelDuplexHandler, RemovableChannelHandler {
    typealias InboundIn = ByteBuffer
    typealias InboundOut = ByteBuffer
    /// Whatever the encoders above send (bytes or file regions): passed on untouched.
    typealias OutboundIn = Any
    typealias OutboundOut = ByteBuffer

    struct Timeouts: Sendable {
        let header: TimeAmount
        let idle: TimeAmount
    }

    private let table: ConnectionTable
    private let timeouts: Timeouts
    private var started = false
    private var headDeadline: Scheduled<Void>?
    private var stallDeadline: Scheduled<Void>?
    /// The first request's head has arrived: from here Hummingbird times the connection.
    private var headArrived = false
    /// Bytes of the first head seen, and line ends in a row at its end ("\r\n\r\n" or "\n\n").
    private var headBytes = 0
    private var lineEnds = 0
    private var answered = false

    init(table: ConnectionTable, timeouts: Timeouts) {
        self.table = table
        self.timeouts = timeouts
    }

    func handlerAdded(context: ChannelHandlerContext) {
        if context.channel.isActive { start(context) }
    }

    func channelActive(context: ChannelHandlerContext) {
        start(context)
        context.fireChannelActive()
    }

    private func start(_ context: ChannelHandlerContext) {
        guard !started else { return }
        started = true
        let address = context.channel.remoteAddress?.ipAddress ?? "unknown"
        guard table.open(address) else {
            respond(context, status: 503, "Service Unavailable", "too many connections from \(address) (max_connections_per_client = \(table.perClient)); close some and retry")
            return
        }
        let table = self.table
        context.channel.closeFuture.whenComplete { _ in table.close(address) }
        headDeadline = context.eventLoop.assumeIsolated().scheduleTask(in: timeouts.header) { [self] in
            headDeadline = nil
            if headBytes == 0 {
                context.close(promise: nil)
            } else {
                respond(context, status: 408, "Request Timeout", "the request's head did not arrive within header_timeout_seconds (\(timeouts.header.nanoseconds / 1_000_000_000) s)")
            }
        }
    }

    func channelRead(context: ChannelHandlerContext, data: NIOAny) {
        if answered { return }
        if !headArrived { scan(context, unwrapInboundIn(data)) }
        context.fireChannelRead(data)
    }

    /// Looks for the blank line that ends the first head; blank lines before the request line
    /// (allowed by RFC 9112) do not count.
    private func scan(_ context: ChannelHandlerContext, _ buffer: ByteBuffer) {
        for byte in buffer.readableBytesView {
            switch byte {
            case UInt8(ascii: "\n"): if headBytes > 0 { lineEnds += 1 }
            case UInt8(ascii: "\r"): break
            default:
                headBytes += 1
                lineEnds = 0
            }
            if lineEnds == 2 {
                headArrived = true
                headDeadline?.cancel()
                headDeadline = nil
                return
            }
        }
    }

    func write(context: ChannelHandlerContext, data: NIOAny, promise: EventLoopPromise<Void>?) {
        // After `respond`, the connection says nothing more (SwiftNIO's own answer to a refused
        // upgrade, for one).
        if answered {
            promise?.succeed(())
            return
        }
        context.write(data, promise: promise)
    }

    func channelWritabilityChanged(context: ChannelHandlerContext) {
        if context.channel.isWritable {
            stallDeadline?.cancel()
            stallDeadline = nil
        } else if stallDeadline == nil {
            stallDeadline = context.eventLoop.assumeIsolated().scheduleTask(in: timeouts.idle) {
                context.close(promise: nil)
            }
        }
        context.fireChannelWritabilityChanged()
    }

    /// A client that closes its side before its first head is complete will send nothing more:
    /// the connection is closed now rather than at the header timeout.
    func userInboundEventTriggered(context: ChannelHandlerContext, event: Any) {
        if !headArrived, case ChannelEvent.inputClosed? = event as? ChannelEvent {
            headDeadline?.cancel()
            headDeadline = nil
            context.close(promise: nil)
            return
        }
        context.fireUserInboundEventTriggered(event)
    }

    func channelInactive(context: ChannelHandlerContext) {
        headDeadline?.cancel()
        stallDeadline?.cancel()
        context.fireChannelInactive()
    }

    /// Answers `status` with `{"error": message}` and closes the connection; whatever the
    /// handlers above write afterwards is not sent. Once per connection.
    func respond(_ context: ChannelHandlerContext, status: Int, _ reason: String, _ message: String) {
        guard !answered else { return }
        answered = true
        headDeadline?.cancel()
        let body = (try? JSONEncoder().encode(["error": message])) ?? Data("{}".utf8)
        var buffer = context.channel.allocator.buffer(capacity: body.count + 200)
        buffer.writeString("HTTP/1.1 \(status) \(reason)\r\nContent-Type: application/json; charset=utf-8\r\nContent-Length: \(body.count)\r\n"
            + "Cache-Control: no-store\r\nConnection: close\r\n\r\n")
        buffer.writeBytes(body)
        context.writeAndFlush(wrapOutboundOut(buffer)).assumeIsolated().whenComplete { _ in context.close(promise: nil) }
    }
}

extension ConnectionGuard {
    /// Answers from the connection's guard, on its event loop (for the routes, which run elsewhere).
    static func respond(on channel: any Channel, status: Int, _ reason: String, _ message: String) async {
        try? await channel.eventLoop.submit {
            let handler = try channel.pipeline.syncOperations.handler(type: ConnectionGuard.self)
            let context = try channel.pipeline.syncOperations.context(handlerType: ConnectionGuard.self)
            handler.respond(context, status: status, reason, message)
        }.get()
    }
}
