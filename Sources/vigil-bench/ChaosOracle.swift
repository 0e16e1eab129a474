import Capture
import CaptureTesting
import Foundation
import Recorder

/// The analysis half of `Scripts/soak-chaos` (whose header explains the measures): decodes
/// every recording under `root` with the pattern decoder and reports frames kept once, repeated
/// or missing, the frames each `kill -9` cost, files that do not decode and `.partial` left.
/// `killsFile` has one line per kill: `WALL_NANOS CAMERA[,CAMERA…]` (the cameras recording then).
/// Returns false when a file does not decode, a `.partial` is left, or a camera has no video
/// left at all (a soak that keeps nothing proves nothing: the free-space sweep deletes the
/// oldest recordings, never the last ones).
func soakAnalysis(root: String, killsFile: String, framesPerSecond fps: Double) throws -> Bool {
    let names = (FileManager.default.enumerator(atPath: root)?.compactMap { $0 as? String } ?? [])
        .filter { !$0.hasPrefix(".") }.sorted()
    let partials = names.filter { $0.hasSuffix(".partial") }
    let quarantined = (try? FileManager.default.contentsOfDirectory(atPath: StorageLayout(root: root).absolute(StorageLayout.quarantineFolder)))?.count ?? 0
    let index = Dictionary(try RecordingIndex(root: root).entries().map { ($0.path, $0) }, uniquingKeysWith: { a, _ in a })
    var undecodable: [String] = []

    // Stills must decode and carry a readable frame number.
    let stills = names.filter { $0.hasSuffix(".jpg") }
    for still in stills where (try? RecordingInspector.decode("\(root)/\(still)").sequences.first ?? nil) == nil {
        undecodable.append(still)
    }

    // Videos, per camera in time order, split into runs: one run per opening of the camera's
    // stream (its frame numbers start again at 0 each time).
    let videos = names.filter { $0.hasSuffix(".mp4") || $0.hasSuffix(".mkv") }
    var runs: [String: [SoakRun]] = [:]
    var frames = 0, repeated = 0, repeatedDistinct = 0, missingInRuns = 0, unreadableFrames = 0
    for video in videos {
        let camera = String(video.prefix { $0 != "/" })
        let sequences: [UInt32?]
        do { sequences = try RecordingInspector.decode("\(root)/\(video)").sequences } catch {
            undecodable.append("\(video): \(error)")
            continue
        }
        if sequences.isEmpty { undecodable.append("\(video): no frame"); continue }
        let fileStart = index[video]?.startNanos ?? StorageLayout.wallNanos(fromFileName: (video as NSString).lastPathComponent) ?? 0
        for (position, sequence) in sequences.enumerated() {
            guard let s = sequence else { unreadableFrames += 1; continue }
            frames += 1
            if var run = runs[camera]?.last, s != 0, run.seen.contains(s) || s > run.last {
                if run.seen.contains(s) { repeated += 1; if run.repeated.insert(s).inserted { repeatedDistinct += 1 } } else { missingInRuns += Int(s - run.last - 1) }
                run.seen.insert(s)
                run.last = max(run.last, s)
                runs[camera]![runs[camera]!.count - 1] = run
            } else {
                // Frame s of a new run was captured `position` frames after the file's first.
                let captured = fileStart + Int64(Double(position) * 1e9 / fps)
                runs[camera, default: []].append(SoakRun(firstFrameNanos: captured - Int64(Double(s) * 1e9 / fps), last: s, seen: [s]))
            }
        }
    }

    // Loss per kill and camera: frames the camera had delivered to the killed process by the
    // kill (its pace from the run's frame 0) minus the frames of that run on disk.
    // A kill is measured only against a run that began after the kill before it (so it is the
    // killed process's own); if retention deleted that run, the kill is not measurable.
    var losses: [Int] = [], unmeasured = 0
    var previousKill = Int64.min
    let kills = ((try? String(contentsOfFile: killsFile, encoding: .utf8)) ?? "").split(separator: "\n")
    for line in kills {
        let fields = line.split(separator: " ")
        guard let killed = fields.first.flatMap({ Int64($0) }) else { continue }
        defer { previousKill = killed }
        let cameras = fields.count > 1 ? fields[1].split(separator: ",").map(String.init) : Array(runs.keys)
        for camera in cameras {
            guard let run = runs[camera]?.last(where: { $0.firstFrameNanos < killed }), run.firstFrameNanos > previousKill else {
                unmeasured += 1
                continue
            }
            let delivered = Int(Double(killed - run.firstFrameNanos) * fps / 1e9) + 1
            losses.append(max(0, delivered - Int(run.last) - 1))
        }
    }

    let runCount = runs.values.reduce(0) { $0 + $1.count }
    print("files: \(videos.count) videos, \(stills.count) stills; runs (stream openings): \(runCount)")
    let distinct = frames - repeated
    print("frames recorded: \(distinct) distinct; exactly once: \(distinct - repeatedDistinct); more than once: \(repeatedDistinct) (\(repeated) extra copies); unreadable: \(unreadableFrames)")
    print("frames missing inside a run (dropped, disk full, or deleted by retention): \(missingInRuns)")
    if unmeasured > 0 { print("kill×camera not measurable (the killed run's files were deleted or never written): \(unmeasured)") }
    if losses.isEmpty {
        print("frames lost per kill: no kill measured")
    } else {
        let sorted = losses.sorted()
        let median = sorted[sorted.count / 2], worst = sorted.last!
        print(String(format: "frames lost per kill (%d kill×camera): median %d (%.2f s), max %d (%.2f s) at %g fps",
                     sorted.count, median, Double(median) / fps, worst, Double(worst) / fps, fps))
    }
    print("files that do not decode: \(undecodable.count)")
    for file in undecodable.prefix(20) { print("  \(file)") }
    print(".partial left: \(partials.count); leftovers moved to .quarantine: \(quarantined)")
    for file in partials.prefix(20) { print("  \(file)") }
    let cameras = Set((videos + stills).map { String($0.prefix { $0 != "/" }) })
    let withoutVideo = cameras.subtracting(videos.map { String($0.prefix { $0 != "/" }) }).sorted()
    if videos.isEmpty || !withoutVideo.isEmpty {
        print("no video left\(withoutVideo.isEmpty ? "" : " of camera(s) \(withoutVideo.joined(separator: ", "))"): every recording was deleted or never written")
    }
    return undecodable.isEmpty && partials.isEmpty && !videos.isEmpty && withoutVideo.isEmpty
}

/// One opening of a camera's stream as it appears on disk.
struct SoakRun {
    /// Capture time of its frame 0 (from the index's first-frame time of the file it starts in).
    let firstFrameNanos: Int64
    var last: UInt32
    var seen: Set<UInt32>
    var repeated: Set<UInt32> = []
}
