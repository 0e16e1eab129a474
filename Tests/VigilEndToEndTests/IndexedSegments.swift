import CaptureTesting
import Foundation
import Testing

/// A segment as `vigil recordings --json` lists it.
struct IndexedSegment {
    let path: String
    /// The wall-clock times of its first and last frame.
    let startNanos: Int64
    let endNanos: Int64
}

private func parseTime(_ text: String) -> Int64? {
    let f = ISO8601DateFormatter()
    f.formatOptions = [.withInternetDateTime, .withFractionalSeconds]
    return f.date(from: text).map { Int64(($0.timeIntervalSince1970 * 1000).rounded()) * 1_000_000 }
}

/// `vigil recordings --json` for one camera: its segments, oldest first, and its gaps.
func indexedSegments(_ data: String, camera: String) throws -> (segments: [IndexedSegment], gaps: [(from: Int64, to: Int64)]) {
    let json = VigilBinary.run(["recordings", "--data", data, "--json", "--camera", camera])
    #expect(json.status == 0, "\(json.errorOutput)")
    let parsed = try #require(try JSONSerialization.jsonObject(with: Data(json.output.utf8)) as? [String: Any])
    let rows = parsed["recordings"] as? [[String: Any]] ?? []
    let segments = try rows.map { row in
        IndexedSegment(path: data + "/" + (try #require(row["path"] as? String)),
                       startNanos: try #require(parseTime(row["start"] as? String ?? "")), endNanos: try #require(parseTime(row["end"] as? String ?? "")))
    }.sorted { $0.startNanos < $1.startNanos }
    let gaps = try (parsed["gaps"] as? [[String: Any]] ?? []).map { gap in
        (from: try #require(parseTime(gap["from"] as? String ?? "")), to: try #require(parseTime(gap["to"] as? String ?? "")))
    }
    return (segments, gaps)
}
