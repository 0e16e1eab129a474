import Capture
import CheckedMath
import Foundation
import Glibc
import Logging

/// `vigil verify`: compares the index with the files under a storage root and lists every place
/// where they differ: a file the index lists that is gone, a file it does not list, a size, a
/// frame count, a codec or picture size, or times other than the file's. Without `deep` a video
/// is read packet by packet (nothing decoded); with it every frame is decoded, as a player would.
/// Reads only: nothing is changed, moved or indexed (start-up recovery does that).
public struct IndexVerification: Sendable {
    public enum ProblemKind: String, Sendable, Codable, CaseIterable {
        /// The index lists a file that is not there.
        case missing
        /// A recording on disk that the index does not list.
        case unindexed
        /// The file's size is not the index's.
        case size
        /// The file holds another number of frames.
        case frames
        /// The index's start or end is not the file's.
        case times
        /// Another codec or picture size.
        case description
        /// The index's state does not fit the file (`missing` but there, `writing` but finished).
        case state
        /// The file cannot be read (or, with --deep, decoded).
        case unreadable
    }

    public struct Problem: Sendable, Equatable, Codable {
        public let problem: ProblemKind
        public let camera: String
        /// Relative to the storage root.
        public let path: String
        /// What differs, in words.
        public let detail: String
    }

    /// Which part of the index to compare; nil does not filter.
    public struct Selection: Sendable {
        public var camera: String?
        public var from: Int64?
        public var to: Int64?
        public var deep: Bool

        public init(camera: String? = nil, from: Int64? = nil, to: Int64? = nil, deep: Bool = false) {
            (self.camera, self.from, self.to, self.deep) = (camera, from, to, deep)
        }
    }

    public let root: String
    public let problems: [Problem]
    /// Index entries compared plus files found that the index does not list.
    public let filesChecked: Int

    /// Compares the index of `root` with its files. `progress(done, total)` is called every
    /// `progressEvery` entries, for long runs. Throws only when the index cannot be read.
    public init(
        index: RecordingIndex, selection: Selection, progressEvery: Int = 100, progress: (Int, Int) -> Void = { _, _ in }
    ) throws {
        root = index.root
        let all = try index.entries(kinds: nil)
        let entries = try index.entries(camera: selection.camera, kinds: nil, from: selection.from, to: selection.to)
        var problems: [Problem] = []
        for (n, entry) in entries.enumerated() {
            if n > 0 && n % progressEvery == 0 { progress(n, entries.count) }
            problems += Self.check(entry, root: root, deep: selection.deep)
        }
        let unindexed = Self.unindexedFiles(root: root, indexed: all, selection: selection)
        problems += unindexed
        self.problems = problems
        filesChecked = entries.count + unindexed.count
    }

    // MARK: - One entry

    private static func check(_ entry: RecordingIndex.Entry, root: String, deep: Bool) -> [Problem] {
        let layout = StorageLayout(root: root)
        func problem(_ kind: ProblemKind, _ detail: String) -> Problem {
            Problem(problem: kind, camera: entry.camera, path: entry.path, detail: detail)
        }
        let size = fileSize(layout.absolute(entry.path))
        switch entry.state {
        case .missing:
            return size.map { [problem(.state, "indexed as missing, but the file is there (\($0) bytes)")] } ?? []
        case .writing:
            // Being written now, or left by a crash for the next start to recover.
            if fileSize(layout.absolute(entry.path + StorageLayout.partialSuffix)) != nil { return [] }
            if let size { return [problem(.state, "indexed as being written, but the file is finished (\(size) bytes)")] }
            return [problem(.missing, "indexed as being written, but there is no file (nor \(StorageLayout.partialSuffix))")]
        case .complete, .interrupted, .recovered, .quarantined:
            break
        }
        guard let size else {
            // Archived and no longer kept here: the bucket holds it.
            if entry.location == .archive { return [] }
            return [problem(.missing, "indexed as \(entry.state.rawValue) (\(entry.frames) frames, \(entry.bytes) bytes), but the file is gone")]
        }
        var problems: [Problem] = []
        if size != entry.bytes { problems.append(problem(.size, "the index says \(entry.bytes) bytes, the file has \(size)")) }
        // Quarantined leftovers are kept because they do not play; stills are one picture each.
        guard entry.state != .quarantined, entry.kind == .segment || entry.kind == .timelapse else { return problems }
        let contents: VideoContents
        do {
            contents = deep ? try VideoContents.decoded(layout.absolute(entry.path)) : try VideoContents.packets(layout.absolute(entry.path))
        } catch {
            return problems + [problem(.unreadable, "\(deep ? "does not decode" : "cannot be read"): \(error)")]
        }
        let held = deep ? "decodes to" : "holds"
        if contents.frames != entry.frames {
            problems.append(problem(.frames, "the index says \(entry.frames) frames, the file \(held) \(contents.frames)"))
        }
        if (entry.codec, entry.width, entry.height) != (contents.codec, contents.width, contents.height) {
            problems.append(problem(.description, "the index says \(entry.codec) \(entry.width)x\(entry.height), the file is \(contents.codec) \(contents.width)x\(contents.height)"))
        }
        // A daily timelapse video is indexed as covering its day, not by its frames' times.
        if entry.kind == .segment, let detail = timesDiffer(entry, contents) { problems.append(problem(.times, detail)) }
        return problems
    }

    /// Whether the index's start and end fit the file: the start within the second its name
    /// gives, and the time from first to last frame within `tolerance` of the file's.
    static func timesDiffer(_ entry: RecordingIndex.Entry, _ contents: VideoContents) -> String? {
        if let named = RecordingFileName((entry.path as NSString).lastPathComponent)?.wallNanos,
           !(named..<(named + Nanoseconds.perSecond)).contains(entry.startNanos) {
            return "the index starts at \(utc(entry.startNanos)), the name says \(utc(named))"
        }
        guard let indexed = entry.endNanos.subtracting(entry.startNanos), indexed >= 0 else {
            return "the index ends (\(utc(entry.endNanos))) before it starts (\(utc(entry.startNanos)))"
        }
        let difference = indexed.subtracting(contents.spanNanos).map { $0.magnitude } ?? .max
        guard difference > UInt64(tolerance(spanNanos: contents.spanNanos, frames: contents.frames)) else { return nil }
        return "the index spans \(seconds(indexed)) s (to \(utc(entry.endNanos))), the file's frames \(seconds(contents.spanNanos)) s"
    }

    /// How far the index's span may be from the file's: the file's timestamps come from the
    /// capture clock and the index's from the wall clock, and a frame shown later than it is
    /// decoded (B-frames) moves the last timestamp on. Two frame intervals, or 1 % of the span,
    /// and never under a tenth of a second: a file cut short by a full disk, listed with the
    /// frames that never reached it, is half a second or more off.
    static func tolerance(spanNanos: Int64, frames: Int) -> Int64 {
        let interval = frames > 1 ? spanNanos / Int64(frames - 1) : 0
        return max(interval.scaled(by: 2, over: 1) ?? .max, spanNanos / 100, 100_000_000)
    }

    // MARK: - Files the index does not list

    private static func unindexedFiles(root: String, indexed: [RecordingIndex.Entry], selection: Selection) -> [Problem] {
        let known = Dictionary(indexed.map { ($0.path, $0) }, uniquingKeysWith: { a, _ in a })
        let cameraOfFolder = StorageRecovery.camerasByFolder(indexed)
        let walk = StorageWalk(root: root, logger: Logger(label: "vigil.verify"), purpose: "verify")
        var problems: [Problem] = []
        func consider(_ relative: String, camera: String) {
            let name = (relative as NSString).lastPathComponent
            if known[relative] != nil { return }
            let parsed = RecordingFileName(name)
            // A file being written is listed under its final name, as `writing`.
            if let parsed, parsed.isPartial, known[String(relative.dropLast(StorageLayout.partialSuffix.count))]?.state == .writing { return }
            if let wanted = selection.camera, wanted != camera { return }
            if let at = parsed?.wallNanos {
                if let from = selection.from, at < from { return }
                if let to = selection.to, at > to { return }
            }
            let size = fileSize(StorageLayout(root: root).absolute(relative)) ?? 0
            problems.append(Problem(problem: .unindexed, camera: camera, path: relative, detail: "not in the index (\(size) bytes)"))
        }
        for folder in walk.cameraFolders() {
            let camera = cameraOfFolder[folder] ?? folder
            for (_, directory) in walk.recordingDirectories(of: folder) {
                // Someone else's file (an export saved here, notes) is neither indexed nor a problem.
                for name in walk.files(in: directory) where RecordingFileName(name) != nil || RecordingFileName.namesATimeOutOfRange(name) {
                    consider("\(directory)/\(name)", camera: camera)
                }
            }
        }
        for relative in walk.files(under: StorageLayout.quarantineFolder) {
            let folder = relative.split(separator: "/").dropFirst().first.map(String.init)
            consider(relative, camera: folder.map { cameraOfFolder[$0] ?? $0 } ?? StorageLayout.quarantineFolder)
        }
        return problems
    }

    // MARK: - Output

    /// One line per problem (`PATH: what differs`), then a count; or one line saying all agree.
    public func text() -> String {
        guard !problems.isEmpty else { return "All \(filesChecked) file(s) agree with the index of \(root).\n" }
        let lines = problems.map { "\($0.path): \($0.problem.rawValue): \($0.detail)" }
        return lines.joined(separator: "\n") + "\n\(problems.count) problem(s) among \(filesChecked) file(s) in \(root).\n"
    }

    /// An array of `{camera, path, problem, detail}` (empty when the index and the files agree).
    public func json() throws -> String {
        guard !problems.isEmpty else { return "[]\n" }
        let encoder = JSONEncoder()
        encoder.outputFormatting = [.prettyPrinted, .sortedKeys, .withoutEscapingSlashes]
        return String(decoding: try encoder.encode(problems), as: UTF8.self) + "\n"
    }

    private static func fileSize(_ path: String) -> Int64? {
        var st = stat()
        guard stat(path, &st) == 0 else { return nil }
        return Int64(st.st_size)
    }

    private static func utc(_ nanos: Int64) -> String {
        let f = ISO8601DateFormatter()
        f.formatOptions = [.withInternetDateTime, .withFractionalSeconds]
        return f.string(from: Date(timeIntervalSince1970: Double(nanos) / 1e9))
    }

    private static func seconds(_ nanos: Int64) -> String { String(format: "%.2f", Double(nanos) / 1e9) }
}
