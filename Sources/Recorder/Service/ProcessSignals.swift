import Foundation
import Synchronization

/// Delivers signals such as SIGHUP (reload) and SIGUSR1 (snapshot) as an async stream, so they
/// are handled as ordinary code rather than inside a signal handler.
public final class ProcessSignals: @unchecked Sendable {
    private var sources: [DispatchSourceSignal] = []
    private let continuations = Mutex<[AsyncStream<Int32>.Continuation]>([])

    public init(_ signals: [Int32]) {
        for number in signals {
            signal(number, SIG_IGN)
            let source = DispatchSource.makeSignalSource(signal: number, queue: .global())
            source.setEventHandler { [weak self] in
                for c in self?.continuations.withLock({ $0 }) ?? [] { c.yield(number) }
            }
            source.resume()
            sources.append(source)
        }
    }

    /// The signals received from now on.
    public func stream() -> AsyncStream<Int32> {
        let (stream, continuation) = AsyncStream<Int32>.makeStream(bufferingPolicy: .bufferingNewest(16))
        continuations.withLock { $0.append(continuation) }
        return stream
    }
}
