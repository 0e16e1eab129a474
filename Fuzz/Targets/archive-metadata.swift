// sources: Sources/Archive/ArchiveMetadataFields.swift Sources/S3/S3Size.swift Sources/CheckedMath/CheckedMath.swift
// What a bucket's HEAD answers about an archived object, as `vigil archive rebuild-index` reads
// it: a Content-Length and the x-amz-meta-vigil-* values, one "name: value" per line. Refused,
// or values in range, whose sums and differences are made without a trap.
import Foundation

@_cdecl("LLVMFuzzerTestOneInput")
public func fuzzOne(_ data: UnsafePointer<UInt8>, _ size: Int) -> Int32 {
    let text = String(decoding: UnsafeRawBufferPointer(start: data, count: size), as: UTF8.self)
    var metadata: [String: String] = [:]
    var sizes: [Int64] = []
    for line in text.split(separator: "\n").prefix(64) {
        guard let colon = line.firstIndex(of: ":") else { continue }
        let name = line[..<colon].lowercased(), value = String(line[line.index(after: colon)...].drop { $0 == " " })
        if name == "content-length" {
            if let bytes = S3Size.parse(value) { sizes.append(bytes) }
        } else if name.hasPrefix("x-amz-meta-") {
            metadata[String(name.dropFirst(11))] = value
        }
    }
    for bytes in sizes { precondition((0...S3Size.maxObjectBytes).contains(bytes)) }
    precondition(sizes.totalBytes { $0 } >= 0)
    if let fields = ArchiveMetadataFields(metadata) {
        precondition(fields.startNanos >= 0 && fields.endNanos >= fields.startNanos)
        precondition(fields.endNanos.subtracting(fields.startNanos) != nil)
        precondition((0...ArchiveMetadataFields.maxCount).contains(fields.frames) && (0...ArchiveMetadataFields.maxCount).contains(fields.width))
        precondition(fields.peakPercent.isFinite && (0...100).contains(fields.peakPercent))
        precondition(!fields.camera.isEmpty && fields.camera.utf8.count <= ArchiveMetadataFields.maxText)
    }
    return 0
}
