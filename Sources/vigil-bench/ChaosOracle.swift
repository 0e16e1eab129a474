import Capture
import CaptureTesting
import Foundation
import Recorder

/// The oracle of `Scripts/chaos` (whose header lists the operations): after a campaign, checks
/// the invariants against what is on disk, whatever the operations did:
///
/// - every frame a synthetic camera painted (its sequence number, from 0 at each opening of its
///   stream: a run) is in exactly one file, or its absence is explained: a file the recorder
///   logged as deleted lay there, a file archived and no longer local lay there, the disk was
///   full then (the campaign's log of operations), or the recorder logged that many frames
///   dropped for that camera;
/// - no two recordings of one camera overlap in time, and their names sort as their times do;
/// - every file decodes, and no `.partial` is left after the final clean stop.
/// `vigil verify --deep` (the index equals the disk, each file decodes to its indexed frames) and
/// the archive's comparison run in the script. Prints a report; returns false on any defect.
struct ChaosOracle {
    let root: String
    /// The recorder's log (every process of the campaign): deletions and drops.
    let recorderLog: String
    /// The campaign's operations: lines `diskfull FROM_NS TO_NS` give the full-disk windows.
    let operations: String
    /// The synthetic cameras' frame rate (they all run at one).
    let framesPerSecond: Double
    /// Cameras whose names start with this paint sequence numbers.
    let syntheticPrefix: String

    private(set) var defects: [String] = []

    /// One run of a synthetic camera: frames from one opening of its stream, in file order.
    struct Run {
        var numbers: [UInt32] = []
        /// Capture time of each frame (its file's first-frame time plus its position).
        var times: [Int64] = []
    }

    mutating func check() throws -> Bool {
        let index = try RecordingIndex(root: root)
        let entries = try index.entries(kinds: [.segment])
        let log = (try? String(contentsOfFile: recorderLog, encoding: .utf8)) ?? ""
        let deleted = Self.deletedFiles(in: log)
        checkTimeline(entries)
        var framesChecked = 0
        for camera in Set(entries.map(\.camera)).sorted() where camera.hasPrefix(syntheticPrefix) {
            let ofCamera = entries.filter { $0.camera == camera }
            // A file whose local copy went (room was needed) after it was archived: its frames
            // are in the bucket, compared there by the script.
            let archivedOnly = ofCamera.filter { $0.location == .archive }.map { (camera: camera, from: $0.startNanos, to: $0.endNanos) }
            let runs = try readRuns(ofCamera.filter { $0.location != .archive })
            framesChecked += runs.reduce(0) { $0 + $1.numbers.count }
            checkEveryFrameOnce(
                camera: camera, runs: runs, deleted: deleted, archivedOnly: archivedOnly, dropped: Self.droppedFrames(of: camera, in: log))
        }
        checkLeftovers()
        print("chaos oracle: \(entries.count) recordings of \(Set(entries.map(\.camera)).count) camera(s); \(framesChecked) painted frames checked")
        print("chaos oracle: \(defects.count) defect(s)")
        for defect in defects.prefix(40) { print("  DEFECT \(defect)") }
        return defects.isEmpty
    }

    /// No two recordings of a camera overlap in time; their names sort as their times.
    private mutating func checkTimeline(_ entries: [RecordingIndex.Entry]) {
        for camera in Set(entries.map(\.camera)).sorted() {
            let files = entries.filter { $0.camera == camera && $0.state != .quarantined && $0.state != .missing }
                .sorted { ($0.startNanos, $0.path) < ($1.startNanos, $1.path) }
            for (a, b) in zip(files, files.dropFirst()) {
                if b.startNanos <= a.endNanos { defects.append("\(camera): \(a.path) and \(b.path) overlap in time") }
                let nameA = (a.path as NSString).lastPathComponent, nameB = (b.path as NSString).lastPathComponent
                if nameB < nameA { defects.append("\(camera): names go back in time: \(nameA) then \(nameB)") }
            }
        }
    }

    /// A synthetic camera's files decoded, in time order, split into runs at each frame 0.
    private mutating func readRuns(_ entries: [RecordingIndex.Entry]) throws -> [Run] {
        var runs: [Run] = []
        for entry in entries.sorted(by: { $0.startNanos < $1.startNanos }) where entry.state != .quarantined && entry.state != .missing {
            let sequences: [UInt32?]
            do { sequences = try RecordingInspector.decode(StorageLayout(root: root).absolute(entry.path)).sequences } catch {
                defects.append("\(entry.path) does not decode: \(error)")
                continue
            }
            for (position, sequence) in sequences.enumerated() {
                guard let number = sequence else {
                    defects.append("\(entry.path): frame \(position) has no readable number")
                    continue
                }
                if number == 0 || runs.isEmpty { runs.append(Run()) }
                runs[runs.count - 1].numbers.append(number)
                runs[runs.count - 1].times.append(entry.startNanos + Int64(Double(position) * 1e9 / framesPerSecond))
            }
        }
        return runs
    }

    /// Within each run: no number twice, and each gap in the numbers explained.
    private mutating func checkEveryFrameOnce(
        camera: String, runs: [Run], deleted: [(camera: String, nanos: Int64)], archivedOnly: [(camera: String, from: Int64, to: Int64)],
        dropped: Int
    ) {
        var unexplainedDrops = dropped
        let fullDisk = Self.fullDiskWindows(in: operations)
        for run in runs {
            var seen = Set<UInt32>()
            for (i, number) in run.numbers.enumerated() {
                if !seen.insert(number).inserted { defects.append("\(camera): frame \(number) of a run is in two places (two writers, or one file twice)") }
                guard i > 0, number > run.numbers[i - 1] + 1 else { continue }
                let missing = Int(number - run.numbers[i - 1] - 1)
                let from = run.times[i - 1] - 2_000_000_000, to = run.times[i] + 2_000_000_000
                if deleted.contains(where: { $0.camera == camera && (from...to).contains($0.nanos) }) { continue }
                if archivedOnly.contains(where: { $0.from <= to && $0.to >= from }) { continue }
                if fullDisk.contains(where: { $0.from <= to && $0.to >= from }) { continue }
                if unexplainedDrops >= missing {
                    unexplainedDrops -= missing
                    continue
                }
                defects.append("\(camera): frames \(run.numbers[i - 1] + 1)…\(number - 1) are in no file, with no deletion, full disk or drop logged")
            }
        }
    }

    private mutating func checkLeftovers() {
        let names = FileManager.default.enumerator(atPath: root)?.compactMap { $0 as? String } ?? []
        for partial in names.filter({ $0.hasSuffix(StorageLayout.partialSuffix) && !$0.hasPrefix(".") }) {
            defects.append("\(partial) left after the final clean stop")
        }
    }

    /// Files the recorder logged as deleted (`deleted PATH: why`), by camera folder and name time.
    static func deletedFiles(in log: String) -> [(camera: String, nanos: Int64)] {
        log.split(separator: "\n").compactMap { line in
            guard let range = line.range(of: "deleted ") else { return nil }
            // ROOT/CAMERA/video/DAY/NAME or CAMERA/video/DAY/NAME: the camera's folder is before `video`.
            let parts = line[range.upperBound...].prefix { $0 != ":" }.split(separator: "/")
            guard let name = parts.last, let nanos = StorageLayout.wallNanos(fromFileName: String(name)),
                  let kind = parts.firstIndex(of: "video"), kind > 0 else { return nil }
            return (String(parts[kind - 1]), nanos)
        }
    }

    /// Frames the recorder logged as dropped for `camera` (`CAMERA: OUTPUT dropped N frame(s)`).
    static func droppedFrames(of camera: String, in log: String) -> Int {
        log.split(separator: "\n").reduce(0) { sum, line in
            guard let range = line.range(of: "\(camera): movie dropped ") else { return sum }
            return sum + (Int(line[range.upperBound...].prefix { $0.isNumber }) ?? 0)
        }
    }

    /// `diskfull FROM_NS TO_NS` lines of the operations' log.
    static func fullDiskWindows(in operations: String) -> [(from: Int64, to: Int64)] {
        ((try? String(contentsOfFile: operations, encoding: .utf8)) ?? "").split(separator: "\n").compactMap { line in
            let words = line.split(separator: " ")
            guard words.count == 3, words[0] == "diskfull", let from = Int64(words[1]), let to = Int64(words[2]) else { return nil }
            return (from, to)
        }
    }
}
