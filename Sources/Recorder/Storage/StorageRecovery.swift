import Capture
import Foundation
import Glibc
import Logging
import Media

/// What start-up recovery found and did.
public struct RecoverySummary: Sendable, Equatable, CustomStringConvertible {
    /// Files the index already knew, present and complete.
    public var known = 0
    /// `.partial` files from an interrupted run, cut to their last good fragment and finalized.
    public var recovered = 0
    /// Complete files the index did not know, now indexed.
    public var adopted = 0
    /// Unplayable leftovers moved to `ROOT/.quarantine/` (never deleted).
    public var quarantined = 0
    /// Index entries whose file is gone.
    public var missing = 0

    public var description: String {
        "index: \(known) recording(s); recovered \(recovered) cut-short segment(s), adopted \(adopted) unknown file(s), "
            + "moved \(quarantined) unplayable leftover(s) to .quarantine, \(missing) missing"
    }
}

/// Start-up recovery (after a crash, a kill or a power cut): makes the index and the files agree
/// again without losing anything. One walk over the directories and one transaction, and no
/// file the index knows as complete is opened, so thousands of segments take a second or two.
enum StorageRecovery {
    static let quarantine = ".quarantine"

    static func run(root: String, index: RecordingIndex, logger: Logger) throws -> RecoverySummary {
        var summary = RecoverySummary()
        let fm = FileManager.default
        var indexed = Dictionary(try index.entries().map { ($0.path, $0) }, uniquingKeysWith: { a, _ in a })
        var seen = Set<String>()
        try index.transaction {
            for camera in (try? fm.contentsOfDirectory(atPath: root)) ?? [] where !camera.hasPrefix(".") {
                for kind in [RecordingIndex.Kind.segment, .still] {
                    let kindDirectory = kind == .segment ? "video" : "stills"
                    let base = "\(camera)/\(kindDirectory)"
                    for day in (try? fm.contentsOfDirectory(atPath: "\(root)/\(base)")) ?? [] {
                        for name in (try? fm.contentsOfDirectory(atPath: "\(root)/\(base)/\(day)")) ?? [] {
                            let relative = "\(base)/\(day)/\(name)"
                            if name.hasSuffix(RecordingPaths.partialSuffix) {
                                let final = String(relative.dropLast(RecordingPaths.partialSuffix.count))
                                if kind == .segment, let entry = recoverSegment(relative, final: final, known: indexed[final], camera: camera, root: root, logger: logger) {
                                    try index.put(entry)
                                    indexed[final] = entry
                                    seen.insert(final)
                                    summary.recovered += 1
                                } else {
                                    moveAside(relative, root: root, logger: logger)
                                    summary.quarantined += 1
                                }
                                continue
                            }
                            seen.insert(relative)
                            if let known = indexed[relative], known.state != .writing, known.state != .missing {
                                summary.known += 1
                                continue
                            }
                            guard let entry = adopt(relative, kind: kind, camera: indexed[relative]?.camera ?? camera, root: root) else {
                                moveAside(relative, root: root, logger: logger)
                                summary.quarantined += 1
                                continue
                            }
                            try index.put(entry)
                            summary.adopted += 1
                        }
                    }
                }
            }
            for (path, entry) in indexed where !seen.contains(path) && entry.state != .missing {
                try index.setState(.missing, path: path)
                summary.missing += 1
            }
        }
        return summary
    }

    /// A `.partial` segment: cut to its last complete fragment, finalized, described by its packets.
    private static func recoverSegment(
        _ relative: String, final: String, known: RecordingIndex.Entry?, camera: String, root: String, logger: Logger
    ) -> RecordingIndex.Entry? {
        let path = "\(root)/\(relative)"
        if relative.hasSuffix(".mp4\(RecordingPaths.partialSuffix)") {
            guard let layout = try? FragmentedMP4.trimToCompleteFragments(path), layout.completeFragments > 0 else { return nil }
        }
        guard var entry = describe(path, relative: final, camera: known?.camera ?? camera) else { return nil }
        if let known, known.state == .writing {
            // The index has the first frame's exact time (the name has whole seconds).
            entry.endNanos += known.startNanos - entry.startNanos
            entry.startNanos = known.startNanos
        }
        do {
            try DurableFile.commit(path, to: "\(root)/\(final)")
        } catch {
            logger.error("recovery: could not finalize \(path): \(error)")
            return nil
        }
        entry.state = .recovered
        logger.notice("recovery: \(final) was cut short; kept its \(entry.frames) complete frame(s)")
        return entry
    }

    /// A complete file the index does not know: a segment is described from its packets, a
    /// still from its name and size.
    private static func adopt(_ relative: String, kind: RecordingIndex.Kind, camera: String, root: String) -> RecordingIndex.Entry? {
        let path = "\(root)/\(relative)"
        if kind == .segment { return describe(path, relative: relative, camera: camera) }
        guard let start = RecordingPaths.wallNanos(fromFileName: (relative as NSString).lastPathComponent) else { return nil }
        var st = stat()
        guard stat(path, &st) == 0, st.st_size > 0 else { return nil }
        return RecordingIndex.Entry(
            kind: .still, camera: camera, path: relative, startNanos: start, endNanos: start, frames: 1, bytes: Int64(st.st_size),
            codec: "mjpeg", width: 0, height: 0, state: .complete)
    }

    /// Frame count and time span from the packets (nothing is decoded); nil if unplayable.
    private static func describe(_ path: String, relative: String, camera: String) -> RecordingIndex.Entry? {
        guard let start = RecordingPaths.wallNanos(fromFileName: (relative as NSString).lastPathComponent),
              let reader = try? PacketReader(path: path) else { return nil }
        let packet = Packet()
        var frames = 0
        var lastPTS: Int64 = 0
        while reader.next(into: packet) {
            frames += 1
            lastPTS = max(lastPTS, packet.pts)
        }
        guard frames > 0 else { return nil }
        var st = stat()
        stat(path, &st)
        return RecordingIndex.Entry(
            kind: .segment, camera: camera, path: relative, startNanos: start, endNanos: start + lastPTS * 100_000 / 9,
            frames: frames, bytes: Int64(st.st_size), codec: reader.stream.codecName, width: reader.stream.width,
            height: reader.stream.height, state: .complete)
    }

    /// Moves a leftover to `ROOT/.quarantine/` under a flattened name: kept for a person to look at.
    private static func moveAside(_ relative: String, root: String, logger: Logger) {
        let directory = "\(root)/\(quarantine)"
        try? FileManager.default.createDirectory(atPath: directory, withIntermediateDirectories: true)
        let target = "\(directory)/\(relative.replacingOccurrences(of: "/", with: "_"))"
        if rename("\(root)/\(relative)", target) == 0 {
            logger.warning("recovery: \(relative) is not playable; moved to \(target)")
        } else {
            logger.error("recovery: \(relative) is not playable and could not be moved aside: \(String(cString: strerror(errno)))")
        }
    }
}
