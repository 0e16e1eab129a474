import Capture
import CaptureTesting
import Foundation
import Plumbing
import Recorder

/// The recordings index under load: the time to index one segment as production does (a
/// `writing` row when the file is created, then `complete`), and start-up recovery of a root
/// holding `count` indexed segments (real files on disk).
func indexBenchmark(count: Int) throws {
    let dir = try TemporaryDirectory("vigil-bench-index")
    defer { dir.remove() }
    let index = try RecordingIndex(root: dir.path)
    let start = Int64(1_790_000_000) * 1_000_000_000
    var perSegment: [Double] = []
    perSegment.reserveCapacity(count)
    var paths: [String] = []
    for i in 0..<count {
        let begin = start + Int64(i) * 60_000_000_000
        let stamp = StorageLayout.utcStamp(begin)
        let path = "porch/video/\(stamp.day)/porch-\(stamp.stamp).mp4"
        paths.append(path)
        let t0 = SystemClocks.monotonicNanos()
        try index.put(RecordingIndex.Entry(kind: .segment, camera: "porch", path: path, startNanos: begin, endNanos: begin, frames: 0, bytes: 0,
                                           codec: "", width: 0, height: 0, state: .writing))
        try index.put(RecordingIndex.Entry(kind: .segment, camera: "porch", path: path, startNanos: begin, endNanos: begin + 59_900_000_000,
                                           frames: 900, bytes: 4_000_000, codec: "h264", width: 1280, height: 720, state: .complete))
        perSegment.append(Double(SystemClocks.monotonicNanos() - t0) / 1e6)
    }
    perSegment.sort()
    print(String(format: "index write per segment (writing + complete, WAL): median %.3f ms, p99 %.3f ms, max %.3f ms over %d segments",
                 perSegment[count / 2], perSegment[count * 99 / 100], perSegment.last!, count))

    // Real (small) files for every entry, as the disk would hold them.
    for path in paths {
        let full = "\(dir.path)/\(path)"
        try FileManager.default.createDirectory(atPath: (full as NSString).deletingLastPathComponent, withIntermediateDirectories: true)
        FileManager.default.createFile(atPath: full, contents: Data(count: 512))
    }
    let t0 = SystemClocks.monotonicNanos()
    let keeper = try StorageKeeper.open(root: dir.path, policy: RetentionPolicy(), events: RecorderEvents())
    let seconds = Double(SystemClocks.monotonicNanos() - t0) / 1e9
    print(String(format: "start-up recovery of %d indexed segments: %.3f s (%@)", count, seconds, keeper.recovery.description))
}
