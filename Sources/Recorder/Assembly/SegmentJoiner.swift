import Capture
import CheckedMath
import Foundation
import Media

/// What an export wrote.
public struct ExportSummary: Sendable {
    public let frames: Int
    public let segments: Int
    /// Wall-clock capture times of the first and last frame exported.
    public let firstNanos: Int64
    public let lastNanos: Int64
    /// Pauses of more than a second between segments, closed up in the output.
    public let gaps: [(from: Int64, to: Int64)]
    public let reencoded: Bool
}

/// Joins a camera's segments into one file. By default by stream copy (nothing is decoded): it
/// starts at the keyframe at or before `from` (every segment starts with one; H.264 has one
/// every 2 s) and ends with the last frame at or before `to`. With `exact`, H.264 is decoded and
/// re-encoded so the file starts at the first frame at or after `from`; MJPEG frames are all
/// keyframes, so a copy is already exact. Timestamps run on continuously: each segment continues
/// one frame interval after the previous one ended, and a pause between segments (camera
/// unplugged, outside a schedule) is closed up and reported. `progress` is told before each
/// segment; an error it throws stops the export (a web client that went away), and nothing is
/// left behind.
public enum SegmentJoiner {
    /// The container an export of these segments is written in: fragmented MP4 for H.264 and
    /// H.265, Matroska for MJPEG.
    public static func container(of segments: [RecordingIndex.Entry]) -> Container {
        segments.first { $0.kind == .segment }?.codec == "mjpeg" ? .matroska : .fragmentedMP4
    }

    /// The codec as a person names it.
    static func codecName(_ codec: String) -> String {
        switch codec {
        case "h264": return "H.264"
        case "hevc": return "H.265"
        case "mjpeg": return "MJPEG"
        default: return codec
        }
    }

    /// `elsewhere`: segments read from another place than the root (archived ones downloaded for
    /// the join), by their path relative to the root.
    public static func export(
        _ segments: [RecordingIndex.Entry], root: String, from: Int64, to: Int64, output: String, exact: Bool,
        elsewhere: [String: String] = [:], progress: (AssemblyProgress) throws -> Void, wrote: (() -> Void)? = nil
    ) throws -> ExportSummary {
        let usable = withoutNested(segments.filter {
            // Only playable files: not missing, being written or quarantined.
            $0.kind == .segment && StorageKeeper.finished.contains($0.state) && $0.endNanos >= from && $0.startNanos <= to
        }.sorted { ($0.startNanos, $0.endNanos) < ($1.startNanos, $1.endNanos) })
        guard let first = usable.first else { throw RecorderError.export("no finished recording between those times") }
        let isH264 = first.codec == "h264"
        let container = Self.container(of: usable)
        guard (output as NSString).pathExtension.lowercased() == container.fileExtension else {
            throw RecorderError.export("these recordings are \(Self.codecName(first.codec)): write them to a .\(container.fileExtension) file (-o NAME.\(container.fileExtension))")
        }
        var job = Join(root: root, elsewhere: elsewhere, from: from, to: to, partial: output + StorageLayout.partialSuffix, container: container, wrote: wrote)
        defer { unlink(job.partial) }
        for (n, entry) in usable.enumerated() {
            try progress(AssemblyProgress(done: n, total: usable.count))
            // Two nodes' files overlap where a camera was handed over (the giver records on until
            // the taker writes): the earlier one ends where the later one begins, so no moment
            // is in the output twice (one within the other is left out above). One node's files
            // are joined as before.
            let next = usable.dropFirst(n + 1).first
            job.until = next.map { $0.startNanos < entry.endNanos && origin($0) != origin(entry) ? min(to, $0.startNanos &- 1) : to } ?? to
            if exact && isH264 { try job.reencode(entry) } else { try job.copy(entry) }
        }
        guard job.frames > 0, let firstWall = job.firstWall else { throw RecorderError.export("no frame between those times") }
        try job.finish()
        try DurableFile.commit(job.partial, to: output)
        try progress(AssemblyProgress(done: usable.count, total: usable.count))
        return ExportSummary(
            frames: job.frames, segments: usable.count, firstNanos: firstWall, lastNanos: job.lastWall, gaps: job.gaps, reencoded: exact && isH264)
    }

    /// `sorted` without another node's files that lie within the one before them: at a
    /// hand-over (`[cluster]`) the giver may begin a short segment while the taker's first one
    /// runs; the taker's has those moments already. One node's files are all kept: they never
    /// overlap unless its clock stepped back, and then each holds frames of its own.
    static func withoutNested(_ sorted: [RecordingIndex.Entry]) -> [RecordingIndex.Entry] {
        var kept: [RecordingIndex.Entry] = []
        for entry in sorted {
            if let last = kept.last, origin(last) != origin(entry), entry.startNanos >= last.startNanos, entry.endNanos <= last.endNanos { continue }
            kept.append(entry)
        }
        return kept
    }

    /// The node a file comes from: "@NODE" for another node's, fetched for a clip or an export
    /// (`SiteSegments` names them `@NODE/PATH`); "" for this node's.
    static func origin(_ entry: RecordingIndex.Entry) -> Substring {
        entry.path.hasPrefix("@") ? entry.path.prefix { $0 != "/" } : ""
    }

    /// The state of one export as segments go by.
    private struct Join {
        let root: String
        let elsewhere: [String: String]
        let from: Int64
        let to: Int64
        /// The last instant of the segment being joined: `to`, or the next one's start less a
        /// nanosecond where they overlap.
        var until: Int64
        let partial: String
        let container: Container
        var muxer: Muxer?
        var encoder: VideoEncoder?
        var size: (width: Int, height: Int)?
        let packet = Packet()
        var frames = 0
        var firstWall: Int64?
        var lastWall: Int64 = 0
        var previousEnd: Int64?
        var gaps: [(Int64, Int64)] = []
        /// Output time of the last frame written, and the frame interval (1/90000 s).
        var outPTS: Int64 = -1
        var frameTicks: Int64 = 6000

        /// Told after every `tellEvery` bytes handed to the muxer (a clip's response reads them).
        let wrote: (() -> Void)?
        var sinceTold = 0
        static let tellEvery = 256 * 1024

        init(root: String, elsewhere: [String: String], from: Int64, to: Int64, partial: String, container: Container, wrote: (() -> Void)?) {
            self.root = root
            self.elsewhere = elsewhere
            self.from = from
            self.to = to
            until = to
            self.partial = partial
            self.container = container
            self.wrote = wrote
        }

        mutating func told(_ bytes: Int) {
            sinceTold += bytes
            guard sinceTold >= Self.tellEvery else { return }
            sinceTold = 0
            wrote?()
        }

        mutating func begin(_ entry: RecordingIndex.Entry, width: Int, height: Int) throws {
            if let end = previousEnd, RecordingsListing.isGap(from: end, to: entry.startNanos) { gaps.append((end, entry.startNanos)) }
            previousEnd = entry.endNanos
            if let size, size != (width, height) {
                throw RecorderError.export("the picture size changes to \(width)x\(height) at \(entry.path): export the parts before and after it separately")
            }
            size = (width, height)
        }

        /// Where this segment's first frame goes in the output: one frame after the last one.
        func base(firstPTS: Int64, of entry: RecordingIndex.Entry) throws -> Int64 {
            let base = outPTS < 0 ? Int64(0).subtracting(firstPTS) : outPTS.adding(frameTicks).flatMap { $0.subtracting(firstPTS) }
            guard let base else { throw Self.outOfRange(entry) }
            return base
        }

        // Times below come from files on disk, which may be damaged or not Vigil's: every sum is
        // checked, and one that does not fit is an error naming the file, never a trap.

        /// The wall-clock instant `ticks` (90 kHz) into `entry`.
        static func wall(_ entry: RecordingIndex.Entry, _ ticks: Int64) throws -> Int64 {
            guard let wall = Nanoseconds.from(ticks: ticks, clockRate: 90_000).flatMap(entry.startNanos.adding) else { throw outOfRange(entry) }
            return wall
        }

        /// `a` + `b` or `a` − `b` of file times, or the file's error.
        static func checked(_ value: Int64?, _ entry: RecordingIndex.Entry) throws -> Int64 {
            guard let value else { throw outOfRange(entry) }
            return value
        }

        static func outOfRange(_ entry: RecordingIndex.Entry) -> RecorderError {
            .export("\(entry.path) holds timestamps out of range (a damaged file?): export the parts before and after it separately")
        }

        /// Where the segment's file is read from.
        func path(of entry: RecordingIndex.Entry) -> String { elsewhere[entry.path] ?? StorageLayout(root: root).absolute(entry.path) }

        mutating func copy(_ entry: RecordingIndex.Entry) throws {
            let path = path(of: entry)
            // The keyframe to start from: the last one at or before `from` (or the first one).
            var startPTS: Int64?
            if firstWall == nil {
                let scan = try PacketReader(path: path)
                while scan.next(into: packet), try Self.wall(entry, packet.dts) <= max(from, entry.startNanos) {
                    if packet.isKeyframe { startPTS = packet.dts }
                }
            }
            let reader = try PacketReader(path: path)
            try begin(entry, width: reader.stream.width, height: reader.stream.height)
            if muxer == nil { muxer = try Muxer(path: partial, container: container, stream: reader.stream) }
            var segmentBase: Int64?
            var previous: Int64?
            // On the decode times, which rise packet by packet even where B-frames make the
            // presentation times go back and forth; each packet keeps its own pts − dts.
            while reader.next(into: packet) {
                let wall = try Self.wall(entry, packet.dts)
                if wall > until { break }
                if let previous, packet.dts > previous { frameTicks = try Self.checked(packet.dts.subtracting(previous), entry) }
                previous = packet.dts
                if firstWall == nil, let startPTS, packet.dts < startPTS { continue }
                if segmentBase == nil { segmentBase = try base(firstPTS: packet.dts, of: entry) }
                outPTS = try Self.checked(packet.dts.adding(segmentBase!), entry)
                try muxer!.write(packet, dts: outPTS, presentationDelay: try Self.checked(packet.pts.subtracting(packet.dts), entry))
                told(packet.size)
                record(wall)
            }
        }

        mutating func reencode(_ entry: RecordingIndex.Entry) throws {
            let reader = try MovieReader(path: path(of: entry))
            try begin(entry, width: reader.width, height: reader.height)
            var segmentBase: Int64?
            var previous: Int64?
            while let frame = try reader.nextFrame() {
                let pts = try Self.checked(Int64(checked: (frame.seconds * 90_000).rounded()), entry)
                let wall = try Self.wall(entry, pts)
                if wall > until { break }
                if let previous, pts > previous { frameTicks = try Self.checked(pts.subtracting(previous), entry) }
                previous = pts
                if wall < from { continue }
                if encoder == nil {
                    encoder = try VideoEncoder(
                        width: frame.picture.width, height: frame.picture.height, framesPerSecond: 90_000 / Double(frameTicks),
                        settings: EncoderSettings(preset: "medium", rateControl: .crf(18)))
                    muxer = try Muxer(path: partial, container: container, stream: encoder!.streamDescription())
                }
                if segmentBase == nil { segmentBase = try base(firstPTS: pts, of: entry) }
                outPTS = try Self.checked(pts.adding(segmentBase!), entry)
                _ = try encoder!.send(frame.picture, pts: outPTS, keyframe: frames == 0)
                try drain()
                record(wall)
            }
        }

        mutating func record(_ wall: Int64) {
            firstWall = firstWall ?? wall
            lastWall = wall
            frames += 1
        }

        mutating func drain() throws {
            while try encoder!.receive(into: packet) == .ok {
                defer { packet.unref() }
                try muxer!.write(packet, dts: packet.pts)
                told(packet.size)
            }
        }

        mutating func finish() throws {
            if let encoder {
                try encoder.sendEndOfStream()
                try drain()
            }
            try muxer?.finish()
        }
    }
}
