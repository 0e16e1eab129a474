import CaptureTesting
import CheckedMath
import Foundation
@testable import Recorder
import Testing

/// Sizes from outside (an index row restored from a bucket, a catalogue row, a file edited by
/// hand) are totalled without a trap: each one below 0 counts as 0, and the sum stops at
/// `Int64.max`. A plain `+` over two rows that claim `Int64.max` bytes stopped the process.
@Suite struct OutsideTotalsTests {
    @Test func totalsSaturateAndIgnoreNegativeSizes() {
        #expect([Int64.max, Int64.max].totalBytes { $0 } == .max)
        #expect([Int64(5), -7, 3].totalBytes { $0 } == 8)
        #expect([Int64.min, Int64.min].totalBytes { $0 } == 0)
        #expect(Int64.max.saturatingAdding(1) == .max && Int64.min.saturatingAdding(-1) == .min && Int64(2).saturatingAdding(-3) == -1)
    }

    /// Two rows that claim `Int64.max` bytes: the listing (`vigil recordings`) sums them.
    @Test func aListingOfAbsurdSizesIsWrittenNotTrapped() throws {
        let dir = try TemporaryDirectory()
        defer { dir.remove() }
        let index = try RecordingIndex(root: dir.path)
        for n in 0..<2 {
            try index.put(RecordingIndex.Entry(
                kind: .segment, camera: "porch", path: "porch/video/a\(n).mp4", startNanos: Int64(n) * 1_000_000_000,
                endNanos: Int64(n + 1) * 1_000_000_000, frames: 10, bytes: .max, codec: "h264", width: 160, height: 120, state: .complete))
        }
        let text = try RecordingsListing(index: index, camera: nil, kind: .segment, from: nil, to: nil, timeZone: TimeZone(identifier: "UTC")!).text()
        #expect(text.contains("porch: 2 segment(s)"), "\(text)")
    }
}
