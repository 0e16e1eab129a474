import Foundation
import Synchronization

/// Turns SIGINT and SIGTERM into a flag the recorder polls, so shutdown runs as ordinary code
/// (finalizing files) rather than inside a signal handler.
public final class StopSignal: @unchecked Sendable {
    private let raised = Atomic<Bool>(false)
    private var sources: [DispatchSourceSignal] = []

    public init(signals: [Int32] = [SIGINT, SIGTERM]) {
        for number in signals {
            signal(number, SIG_IGN)
            let source = DispatchSource.makeSignalSource(signal: number, queue: .global())
            source.setEventHandler { [weak self] in self?.raise() }
            source.resume()
            sources.append(source)
        }
    }

    public var isRaised: Bool { raised.load(ordering: .acquiring) }
    public func raise() { raised.store(true, ordering: .releasing) }
}
