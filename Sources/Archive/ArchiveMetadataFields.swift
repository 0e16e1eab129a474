import Foundation

/// The values of an archived object's `x-amz-meta-vigil-*` headers, read and range-checked as
/// the PostgreSQL catalogue checks its rows: a bucket is input like any other, and what it says
/// reaches the index (and from there clips, listings and retention). Foundation only, so the
/// fuzz target `archive-metadata` compiles it alone.
struct ArchiveMetadataFields: Equatable {
    let kind: String
    let camera: String
    let startNanos: Int64
    let endNanos: Int64
    let frames: Int
    let width: Int
    let height: Int
    let codec: String
    let state: String?
    let peakPercent: Double

    /// Times run from 1970 to 2262 (`Int64` nanoseconds); counts and sizes to a billion.
    static let maxCount = 1_000_000_000
    static let maxText = 256

    /// nil when the object is not Vigil's (no kind or camera) or a time is out of range or order.
    init?(_ metadata: [String: String]) {
        func text(_ name: String) -> String? {
            metadata[name].flatMap { $0.removingPercentEncoding }.flatMap { $0.utf8.count <= Self.maxText ? $0 : nil }
        }
        func time(_ name: String) -> Int64? {
            metadata[name].flatMap { $0.utf8.count <= 19 && $0.utf8.allSatisfy { (0x30...0x39).contains($0) } ? Int64($0) : nil }
        }
        func count(_ name: String) -> Int {
            metadata[name].flatMap { $0.utf8.count <= 10 ? Int($0) : nil }.flatMap { (0...Self.maxCount).contains($0) ? $0 : nil } ?? 0
        }
        guard let kind = text("vigil-kind"), let camera = text("vigil-camera"), !camera.isEmpty,
              let start = time("vigil-start"), let end = time("vigil-end"), end >= start else { return nil }
        (self.kind, self.camera, startNanos, endNanos) = (kind, camera, start, end)
        (frames, width, height) = (count("vigil-frames"), count("vigil-width"), count("vigil-height"))
        codec = text("vigil-codec") ?? ""
        state = metadata["vigil-state"]
        peakPercent = metadata["vigil-peak"].flatMap { $0.utf8.count <= 32 ? Double($0) : nil }.flatMap { $0.isFinite && (0...100).contains($0) ? $0 : nil } ?? 0
    }
}
