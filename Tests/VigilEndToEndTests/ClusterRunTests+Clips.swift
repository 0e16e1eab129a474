import CaptureTesting
import Foundation
import Recorder
import Testing

/// A clip (and `vigil export`) of a camera that moved between nodes joins every node's files of
/// the range.
extension ClusterRunTests {
    /// `page`'s clip of `camera` from the start of the last segment `node` began before `moved`
    /// to the end of the first segment another node wrote after it: it decodes, starts with a
    /// keyframe, and holds every frame of every node's segments in that range once (their
    /// overlaps, at hand-overs, once).
    func expectAClipAcrossNodes(site: LeasedSite, page: String, camera: String, from node: String, before moved: Date) throws {
        let movedNanos = Int64(moved.timeIntervalSince1970 * 1e9)
        var segments: [(node: String, entry: RecordingIndex.Entry)] = []
        for (name, each) in site.nodes {
            let index = try RecordingIndex(root: each.dir + "/data")
            segments += try index.entries(camera: camera, kind: .segment, states: [.complete, .recovered]).map { (name, $0) }
        }
        let last = try #require(segments.filter { $0.node == node && $0.entry.startNanos < movedNanos }.max { $0.entry.startNanos < $1.entry.startNanos },
                                "no segment of \(camera) on \(node)")
        let next = try #require(segments.filter { $0.node != node && $0.entry.startNanos > last.entry.startNanos }.min { $0.entry.startNanos < $1.entry.startNanos },
                                "no segment of \(camera) on another node after \(node)'s last")
        // From the first frame of the earliest file running at the giver's last one's start (a
        // file's start is a keyframe, where a copy begins), to the end of the other node's next.
        let to = next.entry.endNanos
        let from = segments.filter { $0.entry.endNanos >= last.entry.startNanos && $0.entry.startNanos <= to }.map(\.entry.startNanos).min()!
        let inRange = segments.filter { $0.entry.endNanos >= from && $0.entry.startNanos <= to }
        // Times to the millisecond, rounded outwards: the range holds both files whole.
        func text(_ nanos: Int64, up: Bool) -> String {
            let millis = up ? (nanos + 999_999) / 1_000_000 : nanos / 1_000_000
            let date = Date(timeIntervalSince1970: Double(millis) / 1000)
            let format = ISO8601DateFormatter()
            format.formatOptions = [.withInternetDateTime, .withFractionalSeconds]
            return format.string(from: date)
        }
        let clip = site.dir.path + "/clip-\(camera).mp4"
        let status = RecordingInspector.run("/usr/bin/curl", [
            "-sS", "-o", clip, "-w", "%{http_code}",
            "http://127.0.0.1:\(site.ports[page]!)/api/v1/cameras/\(camera)/clip.mp4?from=\(text(from, up: false))&to=\(text(to, up: true))",
        ]).output
        #expect(status == "200", "\(page)'s clip of \(camera): \(status) \((try? String(contentsOfFile: clip, encoding: .utf8))?.prefix(300) ?? "")")
        #expect(RecordingInspector.ffprobeProblem(clip) == nil)
        let decoded = try RecordingInspector.decode(clip)
        let frames = inRange.reduce(0) { $0 + $1.entry.frames }
        // Each moment once: the frames of the time the files cover together (10 fps; files of
        // one node follow each other a frame apart), give or take a frame at each seam between
        // two nodes' files, where their clocks may differ by a fraction of a frame.
        let sorted = inRange.sorted { $0.entry.startNanos < $1.entry.startNanos }
        var covered: [(from: Int64, to: Int64)] = []
        for s in sorted {
            let end = min(s.entry.endNanos, to)
            if let last = covered.last, s.entry.startNanos <= last.to + 150_000_000 {
                covered[covered.count - 1].to = max(last.to, end)
            } else {
                covered.append((s.entry.startNanos, end))
            }
        }
        let expected = covered.reduce(0) { $0 + Int((Double($1.to - $1.from) / 1e8).rounded()) + 1 }
        let seams = zip(sorted, sorted.dropFirst()).filter { $0.node != $1.node }.count
        print("clip of \(camera) through \(page): \(decoded.sequences.count) frames, \(expected) expected (\(frames) in \(inRange.count) segments from \(Set(inRange.map(\.node)).sorted()), \(seams) seam(s))")
        for s in sorted {
            print(String(format: "  %@ %@ %.3f–%.3f s, %ld frames", s.node, s.entry.path, Double(s.entry.startNanos - from) / 1e9, Double(s.entry.endNanos - from) / 1e9, s.entry.frames))
        }
        #expect(decoded.startsWithKeyframe)
        #expect(abs(decoded.sequences.count - expected) <= seams + 1 && decoded.sequences.count <= frames,
                "\(decoded.sequences.count) frames, \(expected) expected, \(frames) in the files")
        #expect(Set(inRange.map(\.node)).count >= 2)
        // `vigil export` on that node, with the site's configuration: the same frames.
        let exported = site.dir.path + "/export-\(camera).mp4"
        let export = RecordingInspector.run("/usr/bin/env", [
            "VIGIL_NODE=\(page)", VigilBinary.path, "export", "--config", site.file, "--data", site.nodes[page]!.dir + "/data", "--camera", camera,
            "--from", text(from, up: false), "--to", text(to, up: true), "-o", exported,
        ])
        #expect(export.status == 0, "\(export.output)\(export.errorOutput)")
        #expect(try RecordingInspector.decode(exported).sequences.count == decoded.sequences.count, "\(export.output)")
    }
}
