import Capture
import CheckedMath
import Foundation
import Glibc
import Logging
import Media
import Plumbing

/// What start-up recovery found and did.
public struct RecoverySummary: Sendable, Equatable, CustomStringConvertible {
    /// Files the index already knew, present and complete.
    public var known = 0
    /// `.partial` files from an interrupted run, cut to their last good fragment and finalized.
    public var recovered = 0
    /// Complete files the index did not know, now indexed.
    public var adopted = 0
    /// Unplayable leftovers moved to `ROOT/.quarantine/` (indexed as `quarantined`).
    public var quarantined = 0
    /// Finished files whose size was not the one indexed (changed on disk since), described
    /// again as they are.
    public var reindexed = 0
    /// Index entries whose file is gone.
    public var missing = 0
    /// Index entries in folders that could not be listed, left as they were.
    public var unlisted = 0

    public var description: String {
        "index: \(known) recording(s); recovered \(recovered) cut-short segment(s), adopted \(adopted) unknown file(s), "
            + "moved \(quarantined) unplayable leftover(s) to .quarantine, \(missing) missing"
            + (reindexed > 0 ? ", \(reindexed) changed on disk since indexed (indexed again as they are)" : "")
            + (unlisted > 0 ? ", \(unlisted) in folders that cannot be listed (left as they were)" : "")
    }
}

/// Start-up recovery (after a crash, a kill or a power cut): makes the index and the files agree
/// again without losing anything. One walk over the directories and one transaction, and no
/// file the index knows as complete is opened, so thousands of segments take a second or two.
/// It covers every kind of file Vigil writes (segments, stills, snapshots, daily timelapse videos
/// and the quarantine), so it also rebuilds a lost index from the files alone.
enum StorageRecovery {

    static func run(root: String, index: RecordingIndex, logger: Logger) throws -> RecoverySummary {
        let walk = StorageWalk(root: root, logger: logger)
        var pass = Pass(
            walk: walk, index: index, indexed: Dictionary(try index.entries().map { ($0.path, $0) }, uniquingKeysWith: { a, _ in a }),
            modified: try index.modifiedTimes())
        try index.transaction {
            let cameraFolders = walk.cameraFolders()
            for folder in cameraFolders {
                let camera = pass.cameraOfFolder[folder] ?? folder
                for (kind, directory) in walk.recordingDirectories(of: folder) {
                    for name in walk.files(in: directory) {
                        try pass.visit(name, in: directory, kind: kind, camera: camera)
                    }
                }
            }
            try pass.indexQuarantine(cameraFolders: cameraFolders)
            try pass.markMissing()
        }
        return pass.summary
    }

    /// One recovery's walk: what the index listed, what was found, and the counts.
    private struct Pass {
        let walk: StorageWalk
        let index: RecordingIndex
        var root: String { walk.root }
        var logger: Logger { walk.logger }
        var indexed: [String: RecordingIndex.Entry]
        /// When each finished file was last modified, as indexed.
        let modified: [String: Int64]
        /// Files adopted in a folder get the camera the index already uses for it.
        let cameraOfFolder: [String: String]
        var seen = Set<String>()
        var summary = RecoverySummary()

        init(walk: StorageWalk, index: RecordingIndex, indexed: [String: RecordingIndex.Entry], modified: [String: Int64]) {
            self.walk = walk
            self.index = index
            self.indexed = indexed
            self.modified = modified
            cameraOfFolder = StorageRecovery.camerasByFolder(indexed.values)
        }

        /// One file in a camera's recording directory: known, recovered, adopted, moved aside or left alone.
        mutating func visit(_ name: String, in directory: String, kind: RecordingIndex.Kind, camera: String) throws {
            let relative = "\(directory)/\(name)"
            // Shaped like a recording but dated past what an index row can hold (2262):
            // not Vigil's, and no instant can be computed from it.
            if RecordingFileName.namesATimeOutOfRange(name) {
                let why = "is named for a time outside \(WallTime.rangeText)"
                if let entry = StorageRecovery.moveAside(relative, kind: kind, camera: camera, root: root, logger: logger, because: why) {
                    try index.put(entry)
                    seen.insert(entry.path)
                    summary.quarantined += 1
                }
                return
            }
            // Someone else's file (an export saved here, notes): neither ours to index nor to move.
            guard RecordingFileName(name) != nil else {
                logger.notice("recovery: \(relative) is not named like a Vigil recording; left alone")
                return
            }
            if name.hasSuffix(StorageLayout.partialSuffix) {
                let final = String(relative.dropLast(StorageLayout.partialSuffix.count))
                if kind == .segment, let entry = StorageRecovery.recoverSegment(relative, final: final, known: indexed[final], camera: camera, root: root, logger: logger) {
                    try index.put(entry)
                    indexed[final] = entry
                    seen.insert(final)
                    summary.recovered += 1
                } else if var entry = StorageRecovery.moveAside(relative, kind: kind, camera: camera, root: root, logger: logger) {
                    // The recording is in the quarantine, not missing: its entry moves there.
                    if let known = indexed.removeValue(forKey: final) {
                        try index.remove(path: final)
                        entry.startNanos = known.startNanos
                        entry.endNanos = max(known.endNanos, known.startNanos)
                    }
                    try index.put(entry)
                    seen.insert(entry.path)
                    summary.quarantined += 1
                }
                return
            }
            seen.insert(relative)
            if let known = indexed[relative], known.state != .writing, known.state != .missing {
                // One stat: a file changed since it was indexed (cut short, rewritten: its size or
                // its modification time differs) is read again, not trusted. Only its time (a
                // `touch`, a copy that dropped its times): its packets are read (not decoded), and
                // when they are the indexed frames its row takes the new time and stays as it was.
                let found = StorageRecovery.onDisk(relative, root: root)
                let timeChanged = modified[relative].map { $0 != found?.modifiedNanos } == true
                guard found?.bytes != known.bytes || (timeChanged && !StorageRecovery.packetsAgree(relative, with: known, root: root)) else {
                    if timeChanged { try index.put(known) }
                    summary.known += 1
                    return
                }
                try reindexChanged(relative, known: known, kind: kind)
                return
            }
            if var entry = StorageRecovery.adopt(relative, kind: kind, camera: indexed[relative]?.camera ?? camera, root: root) {
                // A row left `writing` (its last write did not land: a kill, a full disk) knows
                // the exact start.
                StorageRecovery.keepExactStart(&entry, of: indexed[relative])
                try index.put(entry)
                summary.adopted += 1
            } else if let entry = StorageRecovery.moveAside(relative, kind: kind, camera: camera, root: root, logger: logger) {
                seen.remove(relative)
                try index.put(entry)
                seen.insert(entry.path)
                summary.quarantined += 1
            }
        }

        /// A file whose size is not the one indexed: described again as it is on disk (an MP4
        /// cut back to its last complete fragment, every frame decoded), or moved aside when
        /// nothing of it decodes.
        private mutating func reindexChanged(_ relative: String, known: RecordingIndex.Entry, kind: RecordingIndex.Kind) throws {
            if var entry = StorageRecovery.reread(relative, kind: kind, camera: known.camera, root: root) {
                StorageRecovery.keepExactStart(&entry, of: known)
                if kind == .segment { entry.state = .recovered }
                logger.warning("recovery: \(relative) changed on disk since it was indexed (\(known.bytes) bytes, \(known.frames) frame(s)); indexed again as it is: \(entry.bytes) bytes, \(entry.frames) frame(s)")
                try index.put(entry)
                summary.reindexed += 1
            } else if let entry = StorageRecovery.moveAside(
                relative, kind: kind, camera: known.camera, root: root, logger: logger,
                because: "changed on disk since it was indexed, and nothing of it decodes") {
                seen.remove(relative)
                try index.remove(path: relative)
                try index.put(entry)
                seen.insert(entry.path)
                summary.quarantined += 1
            }
        }

        /// What earlier runs moved aside: indexed too, so it is listed and counted against the limits.
        mutating func indexQuarantine(cameraFolders: [String]) throws {
            for relative in walk.files(under: StorageLayout.quarantineFolder) where !seen.contains(relative) {
                seen.insert(relative)
                if indexed[relative]?.state == .quarantined { continue }
                let entry = StorageRecovery.quarantined(relative, root: root, cameraFolders: cameraFolders, cameraOfFolder: cameraOfFolder, logger: logger)
                try index.put(entry)
            }
        }

        /// What the index lists and the walk did not find: missing (or, in the quarantine, gone for good).
        mutating func markMissing() throws {
            for (path, entry) in indexed where !seen.contains(path) {
                if entry.state == .quarantined {
                    // A person looked at it and removed it: nothing was lost.
                    try index.remove(path: path)
                } else if walk.unreadable.hide(path) {
                    summary.unlisted += 1
                } else if entry.location != .local {
                    // The archive's bucket holds it: only the local copy is gone (deleted after
                    // keep_local_days, or a lost disk), and it plays from there.
                    if entry.location == .both { try index.markLocalCopyGone(path: path) }
                } else if entry.state != .missing {
                    try index.setState(.missing, path: path)
                    summary.missing += 1
                }
            }
        }
    }

    /// The camera each camera folder belongs to, as the index names it: a camera id may differ
    /// from its folder name (`v4l2:usb-…` → `v4l2-usb-…`).
    static func camerasByFolder(_ entries: some Sequence<RecordingIndex.Entry>) -> [String: String] {
        var cameraOfFolder: [String: String] = [:]
        for entry in entries {
            if let folder = entry.path.split(separator: "/").first, folder != StorageLayout.quarantineFolder { cameraOfFolder[String(folder)] = entry.camera }
        }
        return cameraOfFolder
    }

    /// A `.partial` segment: cut to its last complete fragment, finalized, described by its packets.
    private static func recoverSegment(
        _ relative: String, final: String, known: RecordingIndex.Entry?, camera: String, root: String, logger: Logger
    ) -> RecordingIndex.Entry? {
        let path = StorageLayout(root: root).absolute(relative)
        if RecordingFileName((relative as NSString).lastPathComponent)?.fileExtension == "mp4" {
            // Nothing is cut from a file without one complete fragment: it goes to the quarantine whole.
            guard let layout = try? FragmentedMP4.layout(of: path), layout.completeFragments > 0,
                  (try? FragmentedMP4.trimToCompleteFragments(path)) != nil else { return nil }
        }
        guard var entry = describe(path, relative: final, camera: known?.camera ?? camera) else { return nil }
        keepExactStart(&entry, of: known)
        do {
            try DurableFile.commit(path, to: StorageLayout(root: root).absolute(final))
        } catch {
            logger.error("recovery: could not finalize \(path): \(error)")
            return nil
        }
        entry.state = .recovered
        logger.notice("recovery: \(final) was cut short; kept its \(entry.frames) complete frame(s)")
        return entry
    }

    /// A complete file the index does not know: a segment or daily video is described from its
    /// packets, a still or snapshot from its name and size.
    private static func adopt(_ relative: String, kind: RecordingIndex.Kind, camera: String, root: String) -> RecordingIndex.Entry? {
        let path = StorageLayout(root: root).absolute(relative)
        switch kind {
        case .segment:
            // A segment cut short after it was finished (its index lost with it) plays only up to
            // its last complete fragment: cut back to it, and said to be recovered.
            // (An MP4 without fragments, not written by Vigil, is described as it is.)
            var cut = false
            if RecordingFileName((relative as NSString).lastPathComponent)?.fileExtension == "mp4",
               let layout = try? FragmentedMP4.layout(of: path), layout.completeFragments > 0, layout.usableBytes < layout.fileBytes {
                guard (try? FragmentedMP4.trimToCompleteFragments(path)) != nil else { return nil }
                cut = true
            }
            guard var entry = describe(path, relative: relative, camera: camera) else { return nil }
            if cut { entry.state = .recovered }
            return entry
        case .timelapse:
            // Named by its local day; the UTC day of that date stands for it.
            guard var entry = describe(path, relative: relative, camera: camera) else { return nil }
            entry.kind = .timelapse
            entry.endNanos = entry.startNanos + 86_400_000_000_000
            return entry
        case .still, .snapshot:
            guard let start = StorageLayout.wallNanos(fromFileName: (relative as NSString).lastPathComponent) else { return nil }
            var st = stat()
            guard stat(path, &st) == 0, st.st_size > 0 else { return nil }
            return RecordingIndex.Entry(
                kind: kind, camera: camera, path: relative, startNanos: start, endNanos: start, frames: 1, bytes: Int64(st.st_size),
                codec: "mjpeg", width: 0, height: 0, state: .complete)
        }
    }

    /// A segment described from its file starts at its name's whole second; the index's row of
    /// it has its first frame's exact time, which is kept (from a whole second, the file could
    /// seem to begin before the one before it ended). A damaged index's value that would not fit
    /// is left out, the file's own times stand.
    static func keepExactStart(_ entry: inout RecordingIndex.Entry, of known: RecordingIndex.Entry?) {
        guard let known, entry.kind == .segment, known.kind == .segment, WallTime.range.contains(known.startNanos),
              let shift = known.startNanos.subtracting(entry.startNanos), let end = entry.endNanos.adding(shift) else { return }
        entry.endNanos = end
        entry.startNanos = known.startNanos
    }

    /// A file's size and modification time (one stat), or nil when it cannot be read.
    static func onDisk(_ relative: String, root: String) -> (bytes: Int64, modifiedNanos: Int64)? {
        var st = stat()
        guard stat(StorageLayout(root: root).absolute(relative), &st) == 0 else { return nil }
        // A time no index row can hold (before 1970, past 2262) is kept as the largest.
        return (Int64(st.st_size), WallTime.nanos(st.st_mtim) ?? Int64.max)
    }

    /// A finished file that changed on disk: an MP4 is cut back to its last complete fragment,
    /// then a video must decode whole (its packets alone say nothing of a cut frame); its frames
    /// and span are the decoded ones. Nil when nothing of it can be used.
    static func reread(_ relative: String, kind: RecordingIndex.Kind, camera: String, root: String) -> RecordingIndex.Entry? {
        let path = StorageLayout(root: root).absolute(relative)
        guard kind == .segment || kind == .timelapse else { return adopt(relative, kind: kind, camera: camera, root: root) }
        if RecordingFileName((relative as NSString).lastPathComponent)?.fileExtension == "mp4",
           let layout = try? FragmentedMP4.layout(of: path), layout.completeFragments > 0 {
            guard (try? FragmentedMP4.trimToCompleteFragments(path)) != nil else { return nil }
        }
        guard var entry = adopt(relative, kind: kind, camera: camera, root: root),
              let decoded = try? VideoContents.decoded(path), decoded.frames > 0 else { return nil }
        entry.frames = decoded.frames
        if kind == .segment, let end = entry.startNanos.adding(decoded.spanNanos), WallTime.range.contains(end) { entry.endNanos = end }
        entry.bytes = onDisk(relative, root: root)?.bytes ?? entry.bytes
        return entry
    }

    /// Whether a video's packets (read, not decoded) are whole and as many as indexed: an MP4
    /// with no bytes past its last complete fragment. A still's size is all that is compared.
    static func packetsAgree(_ relative: String, with known: RecordingIndex.Entry, root: String) -> Bool {
        guard known.kind == .segment || known.kind == .timelapse else { return true }
        let path = StorageLayout(root: root).absolute(relative)
        if RecordingFileName((relative as NSString).lastPathComponent)?.fileExtension == "mp4",
           let layout = try? FragmentedMP4.layout(of: path), layout.completeFragments > 0, layout.usableBytes != layout.fileBytes {
            return false
        }
        return (try? VideoContents.packets(path))?.frames == known.frames
    }

    /// Frame count and time span from the packets (nothing is decoded); nil if unplayable.
    private static func describe(_ path: String, relative: String, camera: String) -> RecordingIndex.Entry? {
        guard let start = StorageLayout.wallNanos(fromFileName: (relative as NSString).lastPathComponent),
              let contents = try? VideoContents.packets(path), contents.frames > 0,
              let end = start.adding(contents.spanNanos), WallTime.range.contains(end) else { return nil }
        var st = stat()
        stat(path, &st)
        return RecordingIndex.Entry(
            kind: .segment, camera: camera, path: relative, startNanos: start, endNanos: end,
            frames: contents.frames, bytes: Int64(st.st_size), codec: contents.codec, width: contents.width,
            height: contents.height, state: .complete)
    }

    /// Moves a leftover to `ROOT/.quarantine/`, at the same path below it: kept for a person to
    /// look at, and indexed as `quarantined`. Nil if it could not be moved.
    private static func moveAside(
        _ relative: String, kind: RecordingIndex.Kind, camera: String, root: String, logger: Logger, because why: String = "is not playable"
    ) -> RecordingIndex.Entry? {
        let layout = StorageLayout(root: root)
        var target = StorageLayout.quarantined(relative)
        try? FileManager.default.createDirectory(atPath: layout.absolute((target as NSString).deletingLastPathComponent), withIntermediateDirectories: true)
        var n = 2
        while FileManager.default.fileExists(atPath: layout.absolute(target)) {
            target = StorageLayout.quarantined(relative, attempt: n)
            n += 1
        }
        guard rename(StorageLayout(root: root).absolute(relative), StorageLayout(root: root).absolute(target)) == 0 else {
            logger.error("recovery: \(relative) \(why) and could not be moved aside: \(String(cString: strerror(errno)))")
            return nil
        }
        logger.warning("recovery: \(relative) \(why); moved to \(root)/\(target)")
        return quarantinedEntry(target, kind: kind, camera: camera, root: root, logger: logger)
    }

    /// A file found in `.quarantine/`: `.quarantine/CAMERA/FOLDER/…` since quarantined files keep
    /// their path, or a flat `CAMERA_FOLDER_DAY_NAME` from older versions.
    private static func quarantined(
        _ relative: String, root: String, cameraFolders: [String], cameraOfFolder: [String: String], logger: Logger
    ) -> RecordingIndex.Entry {
        let parts = relative.split(separator: "/").dropFirst().map(String.init)
        let name = parts.last ?? relative
        let folder = parts.count > 1 ? parts[0] : cameraFolders.filter { name.hasPrefix($0 + "_") }.max { $0.count < $1.count }
        let kinds = RecordingIndex.Kind.allCases
        let kind = parts.count > 2 ? kinds.first { $0.folder == parts[1] } ?? .segment
            : kinds.first { kind in folder.map { name.hasPrefix("\($0)_\(kind.folder)_") } ?? false } ?? .segment
        return quarantinedEntry(relative, kind: kind, camera: folder.map { cameraOfFolder[$0] ?? $0 } ?? StorageLayout.quarantineFolder, root: root, logger: logger)
    }

    private static func quarantinedEntry(_ relative: String, kind: RecordingIndex.Kind, camera: String, root: String, logger: Logger) -> RecordingIndex.Entry {
        var st = stat()
        lstat(StorageLayout(root: root).absolute(relative), &st)
        // Named by when it was recorded if the name says so, else by when it was last written,
        // else (a name and a modification time past 2262) by now.
        let start = StorageLayout.wallNanos(fromFileName: (relative as NSString).lastPathComponent) ?? WallTime.nanos(st.st_mtim) ?? {
            logger.warning("recovery: \(relative) has neither a name nor a modification time within \(WallTime.rangeText); listed in the quarantine as of now")
            return SystemClocks.wallNanos()
        }()
        return RecordingIndex.Entry(
            kind: kind, camera: camera, path: relative, startNanos: start, endNanos: start, frames: 0, bytes: Int64(st.st_size),
            codec: "", width: 0, height: 0, state: .quarantined)
    }
}
