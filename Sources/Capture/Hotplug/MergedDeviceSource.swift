/// Several device sources seen as one (USB cameras and synthetic test cameras side by side).
public struct MergedDeviceSource: DeviceSource {
    public let sources: [any DeviceSource]

    public init(_ sources: [any DeviceSource]) { self.sources = sources }

    public func devices() -> [CaptureDevice] { sources.flatMap { $0.devices() } }

    public func changes() -> AsyncStream<DeviceChange> {
        let streams = sources.map { $0.changes() }
        return AsyncStream(bufferingPolicy: .bufferingNewest(64)) { continuation in
            let tasks = streams.map { stream in
                Task {
                    for await change in stream { continuation.yield(change) }
                }
            }
            continuation.onTermination = { _ in tasks.forEach { $0.cancel() } }
        }
    }
}
