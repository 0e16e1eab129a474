import Capture
import CheckedMath
import Foundation

/// What `vigil recordings` prints: a camera's segments (or stills, snapshots and daily timelapse
/// videos) in time order, quarantined leftovers among them, with the gaps between segments
/// shown, as text or JSON.
public struct RecordingsListing: Sendable {
    public let entries: [RecordingIndex.Entry]
    public let timeZone: TimeZone
    /// A pause longer than this between two segments is shown as a gap: the bound at which the
    /// recorder itself ends a file, so that a cut on the wall-clock grid is never called a gap.
    public static let gapNanos = SegmentedMovieOutput.gapNanos

    /// Whether `later` starts more than `gapNanos` after `earlier` ends (index times are any
    /// 64-bit values a file on disk held: a difference that does not fit is a gap).
    static func isGap(from earlier: Int64, to later: Int64) -> Bool {
        later.subtracting(earlier).map { $0 > gapNanos } ?? true
    }

    /// `kind` `.segment` lists video segments; any other kind lists stills, snapshots and daily
    /// timelapse videos together.
    /// `from`, `to`: instants as `WallTime` holds them (nil: no limit).
    public init(index: RecordingIndex, camera: String?, kind: RecordingIndex.Kind, from: Int64?, to: Int64?, timeZone: TimeZone = .current) throws {
        entries = try index.entries(
            camera: camera, kinds: kind == .segment ? StorageKeeper.videoKinds : StorageKeeper.stillKinds, from: from, to: to)
        self.timeZone = timeZone
    }

    /// `entries` as they are (the site's recordings, from several nodes), by start time.
    public init(entries: [RecordingIndex.Entry], timeZone: TimeZone) {
        self.entries = entries
        self.timeZone = timeZone
    }

    /// The gaps between the segments of each camera: (camera, from, to). Segments may overlap
    /// (two nodes while a camera moved between them): a gap begins where everything before it
    /// ended.
    public var gaps: [(camera: String, from: Int64, to: Int64)] {
        var result: [(String, Int64, Int64)] = []
        for (camera, list) in Dictionary(grouping: entries.filter { $0.kind == .segment && $0.state != .missing && $0.state != .quarantined }, by: \.camera).sorted(by: { $0.key < $1.key }) {
            var covered: Int64?
            for entry in list {
                if let covered, Self.isGap(from: covered, to: entry.startNanos) { result.append((camera, covered, entry.startNanos)) }
                covered = max(covered ?? entry.endNanos, entry.endNanos)
            }
        }
        return result
    }

    public func text() -> String {
        guard !entries.isEmpty else { return "No recordings in that range.\n" }
        var lines: [String] = []
        for (camera, list) in Dictionary(grouping: entries, by: \.camera).sorted(by: { $0.key < $1.key }) {
            let bytes = list.totalBytes(\.bytes)
            lines.append("\(camera): \(list.count) \(list[0].kind == .segment ? "segment" : "still")(s), \(Self.size(bytes))")
            var previous: RecordingIndex.Entry?
            for entry in list {
                if let previous, entry.kind == .segment, previous.state != .missing, previous.state != .quarantined, entry.state != .quarantined, Self.isGap(from: previous.endNanos, to: entry.startNanos) {
                    lines.append("  — gap of \(Self.duration(entry.startNanos.subtracting(previous.endNanos) ?? .max)) —")
                }
                if entry.kind == .segment {
                    lines.append("  \(time(entry.startNanos)) → \(time(entry.endNanos, roundingUp: true))  \(String(format: "%6d", entry.frames)) frames  "
                        + "\(Self.size(entry.bytes).padding(toLength: 9, withPad: " ", startingAt: 0))  \(entry.state.rawValue.padding(toLength: 11, withPad: " ", startingAt: 0))  \(entry.path)\(Self.where(entry))")
                } else {
                    let state = entry.state == .complete ? "" : "\(entry.state.rawValue)  "
                    lines.append("  \(time(entry.startNanos))  \(Self.size(entry.bytes).padding(toLength: 9, withPad: " ", startingAt: 0))  \(state)\(entry.path)\(Self.where(entry))")
                }
                previous = entry
            }
        }
        return lines.joined(separator: "\n") + "\n"
    }

    public func json() throws -> String {
        struct Row: Encodable {
            let camera, kind, path, state, start, end, codec, location: String
            let frames: Int
            let bytes: Int64
            let width, height: Int
        }
        let f = ISO8601DateFormatter()
        f.formatOptions = [.withInternetDateTime, .withFractionalSeconds]
        func iso(_ n: Int64) -> String { f.string(from: Date(timeIntervalSince1970: Double(n) / 1e9)) }
        let rows = entries.map {
            Row(camera: $0.camera, kind: $0.kind.rawValue, path: $0.path, state: $0.state.rawValue, start: iso($0.startNanos),
                end: iso($0.endNanos), codec: $0.codec, location: $0.location.rawValue, frames: $0.frames, bytes: $0.bytes, width: $0.width, height: $0.height)
        }
        struct Gap: Encodable { let camera, from, to: String }
        struct Listing: Encodable { let recordings: [Row]; let gaps: [Gap] }
        let encoder = JSONEncoder()
        encoder.outputFormatting = [.prettyPrinted, .sortedKeys]
        let listing = Listing(recordings: rows, gaps: gaps.map { Gap(camera: $0.camera, from: iso($0.from), to: iso($0.to)) })
        return String(decoding: try encoder.encode(listing), as: UTF8.self) + "\n"
    }

    /// Local time with its offset, as `vigil export --from/--to` accept it back.
    private func time(_ nanos: Int64, roundingUp: Bool = false) -> String {
        TimeArgument.format(Date(timeIntervalSince1970: Double(nanos) / 1e9), timeZone: timeZone, roundingUp: roundingUp)
    }

    /// Said after the path of an archived file: in the bucket only, or here and there.
    private static func `where`(_ entry: RecordingIndex.Entry) -> String {
        switch entry.location {
        case .local: return ""
        case .archive: return "  [archive]"
        case .both: return "  [local+archive]"
        }
    }

    public static func size(_ bytes: Int64) -> String {
        bytes >= 1 << 30 ? String(format: "%.1f GiB", Double(bytes) / 1_073_741_824)
            : bytes >= 1 << 20 ? String(format: "%.1f MiB", Double(bytes) / 1_048_576) : String(format: "%.0f KiB", Double(bytes) / 1024)
    }

    static func duration(_ nanos: Int64) -> String {
        let s = Double(nanos) / 1e9
        return s < 120 ? String(format: "%.1f s", s) : s < 7200 ? String(format: "%.0f min", s / 60) : String(format: "%.1f h", s / 3600)
    }
}
