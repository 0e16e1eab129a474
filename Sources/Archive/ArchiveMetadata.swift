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

    /// `bytes`: the object's size as S3 stated it (`S3Size`); out of range, nothing is restored.
    static func restore(_ metadata: [String: String], path: String, bytes: Int64) -> Restored? {
        guard (0...S3Size.maxObjectBytes).contains(bytes), let fields = ArchiveMetadataFields(metadata) else { return nil }
        if fields.kind == "event" {
            return .event(camera: fields.camera, startNanos: fields.startNanos, endNanos: fields.endNanos, peakPercent: fields.peakPercent)
        }
        guard let recordingKind = RecordingIndex.Kind(rawValue: fields.kind) else { return nil }
        let state = fields.state.flatMap(RecordingIndex.State.init(rawValue:)) ?? .complete
        return .recording(RecordingIndex.Entry(
            kind: recordingKind, camera: fields.camera, path: path, startNanos: fields.startNanos, endNanos: fields.endNanos,
            frames: fields.frames, bytes: bytes, codec: fields.codec, width: fields.width, height: fields.height,
            state: [.complete, .interrupted, .recovered].contains(state) ? state : .complete))
    }

    /// Header values are ASCII: a camera name with other characters is percent-encoded.
    private static func percentEncoded(_ text: String) -> String {
        text.addingPercentEncoding(withAllowedCharacters: asciiSafe) ?? ""
    }

    private static let asciiSafe = CharacterSet(charactersIn: "ABCDEFGHIJKLMNOPQRSTUVWXYZabcdefghijklmnopqrstuvwxyz0123456789-._~:")
}
