import CheckedMath
import Foundation

/// What `vigil events` prints: motion events in time order, with their length, peak changed
/// area and picture, as text or JSON.
public struct MotionEventsListing: Sendable {
    public let events: [RecordingIndex.MotionEvent]
    public let root: String
    public let timeZone: TimeZone

    /// `from`, `to`: instants as `WallTime` holds them (nil: no limit).
    public init(index: RecordingIndex, camera: String?, from: Int64?, to: Int64?, timeZone: TimeZone = .current) throws {
        events = try index.motionEvents(camera: camera, from: from, to: to)
        root = index.root
        self.timeZone = timeZone
    }

    public func text() -> String {
        guard !events.isEmpty else { return "No motion events in that range.\n" }
        var lines: [String] = []
        for (camera, list) in Dictionary(grouping: events, by: \.camera).sorted(by: { $0.key < $1.key }) {
            lines.append("\(camera): \(list.count) motion event(s)")
            for e in list {
                let span = e.endNanos.map {
                    "→ \(TimeArgument.format(Date(timeIntervalSince1970: Double($0) / 1e9), timeZone: timeZone, roundingUp: true))  "
                        + RecordingsListing.duration(max(0, $0.subtracting(e.startNanos) ?? 0)).padding(toLength: 7, withPad: " ", startingAt: 0)
                } ?? "under way"
                lines.append("  \(TimeArgument.format(Date(timeIntervalSince1970: Double(e.startNanos) / 1e9), timeZone: timeZone)) \(span)  "
                    + String(format: "peak %5.1f %%", e.peakPercent) + (e.picture.map { "  \($0)" } ?? ""))
            }
        }
        return lines.joined(separator: "\n") + "\n"
    }

    public func json() throws -> String {
        struct Row: Encodable {
            let id: Int64
            let camera, start: String
            let end: String?
            let peak_area_percent: Double
            let picture: String?
        }
        let rows = events.map {
            Row(id: $0.id, camera: $0.camera, start: RecorderEvent.iso($0.startNanos), end: $0.endNanos.map(RecorderEvent.iso),
                peak_area_percent: ($0.peakPercent * 10).rounded() / 10, picture: $0.picture)
        }
        let encoder = JSONEncoder()
        encoder.outputFormatting = [.prettyPrinted, .sortedKeys, .withoutEscapingSlashes]
        return String(decoding: try encoder.encode(["events": rows]), as: UTF8.self) + "\n"
    }
}
