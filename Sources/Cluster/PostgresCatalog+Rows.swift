import Logging
import PostgresNIO
import Recorder

/// Rows read back from the database, checked before anyone does arithmetic with them.
extension PostgresCatalog {
    static let entryColumns = "kind, camera, path, start_ns, end_ns, frames, bytes, codec, width, height, state, id"

    /// The largest width or height taken from a row (video frames are far smaller).
    static let maxDimension: Int64 = 65_536

    static func entry(_ row: PostgresRow) throws -> RecordingIndex.Entry {
        let (kind, camera, path, start, end, frames, bytes, codec, width, height, state, id) =
            try row.decode((String, String, String, Int64, Int64, Int64, Int64, String, Int64, Int64, String, Int64).self)
        return try entry(kind, camera, path, start, end, frames, bytes, codec, width, height, state, id)
    }

    /// The entry of a row's `entryColumns`, once each is checked.
    static func entry(
        _ kind: String, _ camera: String, _ path: String, _ start: Int64, _ end: Int64, _ frames: Int64, _ bytes: Int64,
        _ codec: String, _ width: Int64, _ height: Int64, _ state: String, _ id: Int64
    ) throws -> RecordingIndex.Entry {
        guard let knownKind = RecordingIndex.Kind(rawValue: kind) else { throw CatalogError.invalidRow("\(path): unknown kind \"\(kind.prefix(40))\"") }
        guard let knownState = RecordingIndex.State(rawValue: state) else { throw CatalogError.invalidRow("\(path): unknown state \"\(state.prefix(40))\"") }
        guard id > 0 else { throw CatalogError.invalidRow("\(path): id \(id)") }
        guard start >= 0, end >= start else { throw CatalogError.invalidRow("\(path): times \(start)…\(end) are not in order") }
        guard frames >= 0, bytes >= 0 else { throw CatalogError.invalidRow("\(path): \(frames) frames, \(bytes) bytes") }
        guard (0...maxDimension).contains(width), (0...maxDimension).contains(height) else {
            throw CatalogError.invalidRow("\(path): size \(width)×\(height)")
        }
        var entry = RecordingIndex.Entry(
            kind: knownKind, camera: camera, path: path, startNanos: start, endNanos: end, frames: Int(frames), bytes: bytes,
            codec: codec, width: Int(width), height: Int(height), state: knownState)
        entry.id = id
        return entry
    }

    static let motionColumns = "id, camera, start_ns, end_ns, peak_percent, picture, reviewed_ns"

    static func motionEvent(_ row: PostgresRow) throws -> RecordingIndex.MotionEvent {
        let (id, camera, start, end, peak, picture, reviewed) = try row.decode((Int64, String, Int64, Int64?, Double, String?, Int64?).self)
        return try motionEvent(id, camera, start, end, peak, picture, reviewed)
    }

    /// A row of `motionColumns`, checked.
    static func motionEvent(
        _ id: Int64, _ camera: String, _ start: Int64, _ end: Int64?, _ peak: Double, _ picture: String?, _ reviewed: Int64?
    ) throws -> RecordingIndex.MotionEvent {
        guard id > 0, start >= 0, end.map({ $0 >= start }) ?? true, reviewed.map({ $0 >= 0 }) ?? true else {
            throw CatalogError.invalidRow("motion event \(id): times \(start)…\(end.map(String.init) ?? "now") (reviewed \(reviewed.map(String.init) ?? "no"))")
        }
        guard peak.isFinite, (0...100).contains(peak) else { throw CatalogError.invalidRow("motion event \(id): peak \(peak) %") }
        return RecordingIndex.MotionEvent(
            id: id, camera: camera, startNanos: start, endNanos: end, peakPercent: peak, picture: picture, reviewedNanos: reviewed)
    }
}
