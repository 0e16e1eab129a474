import Cluster
import Foundation
import Recorder

extension ClusterCommand.Verify {
    /// What `vigil cluster verify` found, camera by camera, as text or JSON.
    struct Report {
        struct Camera {
            let name: String
            let segments: Int
            let nodes: [String]
            let overlaps: [SiteAudit.Overlap]
        }

        let from: Int64
        let to: Int64
        private(set) var cameras: [Camera] = []

        init(from: Int64, to: Int64) {
            self.from = from
            self.to = to
        }

        mutating func add(_ camera: String, segments: [SiteAudit.Segment], overlaps: [SiteAudit.Overlap]) {
            cameras.append(Camera(name: camera, segments: segments.count, nodes: Array(Set(segments.map(\.node))).sorted(), overlaps: overlaps))
        }

        var handOvers: Int { cameras.reduce(0) { $0 + $1.overlaps.filter(\.isHandOver).count } }
        var unexplained: Int { cameras.reduce(0) { $0 + $1.overlaps.filter { !$0.isHandOver }.count } }

        private static func time(_ nanos: Int64) -> String {
            TimeArgument.format(Date(timeIntervalSince1970: Double(nanos) / 1e9))
        }

        func text() -> String {
            var lines = ["cluster verify: \(cameras.count) camera(s), \(Self.time(from)) – \(Self.time(to))"]
            for camera in cameras {
                let handOvers = camera.overlaps.filter(\.isHandOver)
                var line = "  \(camera.name): \(camera.segments) segment(s) from \(camera.nodes.joined(separator: ", "))"
                if !handOvers.isEmpty {
                    let seconds = handOvers.map(\.seconds)
                    line += String(format: "; %ld hand-over(s), overlaps %.3f–%.3f s", handOvers.count, seconds.min() ?? 0, seconds.max() ?? 0)
                }
                lines.append(line)
                for overlap in camera.overlaps where !overlap.isHandOver {
                    let what = overlap.earlier.node == overlap.later.node ? "two files of one node" : "two writers"
                    lines.append(String(
                        format: "    %@: %@ %@ (%@ – %@) and %@ %@ (%@ – %@) overlap %.3f s with no hand-over between them", what,
                        overlap.earlier.node, overlap.earlier.path, Self.time(overlap.earlier.startNanos), Self.time(overlap.earlier.endNanos),
                        overlap.later.node, overlap.later.path, Self.time(overlap.later.startNanos), Self.time(overlap.later.endNanos), overlap.seconds))
                }
            }
            lines.append(unexplained == 0
                ? "One writer per camera: \(handOvers) hand-over(s), no other overlap."
                : "\(unexplained) overlap(s) without a hand-over (and \(handOvers) hand-over(s)).")
            return lines.joined(separator: "\n")
        }

        func json() throws -> String {
            func file(_ s: SiteAudit.Segment) -> [String: Any] {
                ["node": s.node, "path": s.path, "start": Self.time(s.startNanos), "end": Self.time(s.endNanos)]
            }
            let list = cameras.map { camera -> [String: Any] in
                [
                    "camera": camera.name, "segments": camera.segments, "nodes": camera.nodes,
                    "handovers": camera.overlaps.filter(\.isHandOver).map { ["giver": $0.earlier.node, "taker": $0.later.node, "seconds": $0.seconds] },
                    "overlaps": camera.overlaps.filter { !$0.isHandOver }.map { ["earlier": file($0.earlier), "later": file($0.later), "seconds": $0.seconds] },
                ]
            }
            let object: [String: Any] = ["from": Self.time(from), "to": Self.time(to), "cameras": list, "handovers": handOvers, "overlaps": unexplained]
            return String(decoding: try JSONSerialization.data(withJSONObject: object, options: [.prettyPrinted, .sortedKeys]), as: UTF8.self)
        }
    }
}
