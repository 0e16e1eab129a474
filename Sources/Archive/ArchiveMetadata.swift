import S3
import Foundation
import Recorder

/// What the index knows of a file, carried in its object's `x-amz-meta-vigil-*` headers, so
/// that `vigil archive rebuild-index` can list an archived file again from the bucket alone
/// (a lost disk loses nothing that was archived).
enum ArchiveMetadata {
    /// The headers for a recording or an event's picture; empty for a file the index does not list.
    static func headers(recording entry: RecordingIndex.Entry?, event: RecordingIndex.MotionEvent?) -> [String: String] {
        if let entry {
            return ["vigil-kind": entry.kind.rawValue, "vigil-camera": percentEncoded(entry.camera),
                    "vigil-start": String(entry.startNanos), "vigil-end": String(entry.endNanos), "vigil-frames": String(entry.frames),
                    "vigil-codec": percentEncoded(entry.codec), "vigil-width": String(entry.width), "vigil-height": String(entry.height),
                    "vigil-state": entry.state.rawValue]
        }
        if let event, let end = event.endNanos {
            return ["vigil-kind": "event", "vigil-camera": percentEncoded(event.camera), "vigil-start": String(event.startNanos),
                    "vigil-end": String(end), "vigil-peak": String(format: "%.3f", event.peakPercent)]
        }
        return [:]
    }

    /// What an object's metadata says; nil when it is not Vigil's or a value is out of range.
    enum Restored: Equatable {
        case recording(RecordingIndex.Entry)
        case event(camera: String, startNanos: Int64, endNanos: Int64, peakPercent: Double)
    }

    static func restore(_ metadata: [String: String], path: String, bytes: Int64) -> Restored? {
        guard let kind = metadata["vigil-kind"], let camera = metadata["vigil-camera"].flatMap({ $0.removingPercentEncoding }), !camera.isEmpty,
              let start = metadata["vigil-start"].flatMap({ Int64($0) }), let end = metadata["vigil-end"].flatMap({ Int64($0) }), end >= start
        else { return nil }
        if kind == "event" {
            let peak = metadata["vigil-peak"].flatMap(Double.init).flatMap { $0.isFinite && (0...100).contains($0) ? $0 : nil } ?? 0
            return .event(camera: camera, startNanos: start, endNanos: end, peakPercent: peak)
        }
        guard let recordingKind = RecordingIndex.Kind(rawValue: kind) else { return nil }
        func count(_ name: String) -> Int { metadata[name].flatMap { Int($0) }.flatMap { (0...1_000_000_000).contains($0) ? $0 : nil } ?? 0 }
        let state = metadata["vigil-state"].flatMap(RecordingIndex.State.init(rawValue:)) ?? .complete
        return .recording(RecordingIndex.Entry(
            kind: recordingKind, camera: camera, path: path, startNanos: start, endNanos: end, frames: count("vigil-frames"), bytes: bytes,
            codec: metadata["vigil-codec"].flatMap { $0.removingPercentEncoding } ?? "", width: count("vigil-width"), height: count("vigil-height"),
            state: [.complete, .interrupted, .recovered].contains(state) ? state : .complete))
    }

    /// Header values are ASCII: a camera name with other characters is percent-encoded.
    private static func percentEncoded(_ text: String) -> String {
        text.addingPercentEncoding(withAllowedCharacters: asciiSafe) ?? ""
    }

    private static let asciiSafe = CharacterSet(charactersIn: "ABCDEFGHIJKLMNOPQRSTUVWXYZabcdefghijklmnopqrstuvwxyz0123456789-._~:")
}
