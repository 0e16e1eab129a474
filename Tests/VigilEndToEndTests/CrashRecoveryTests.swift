import CaptureTesting
import Foundation
import Glibc
import Media
import Recorder
import Testing

// Crash recovery, measured in frames: the synthetic camera paints each frame's sequence number
// (0, 1, 2 … from the moment its stream opens), so what a file holds is read back exactly.
// Cut points are deterministic (after the Nth fragment reached the disk, or an exact byte of
// a copied file) and chosen by a printed seed: VIGIL_CRASH_SEED=… replays a failure.

private let fps = 15
private let demo = ["demo", "--size", "160x120", "--fps", "\(fps)", "--segment-seconds", "2", "--timelapse-interval", "1"]

/// Video files of a root (finished and `.partial`), sorted by name, i.e. by time.
private func videoFiles(_ root: String) -> [String] {
    (RecordingInspector.files(under: root, endingWith: ".mp4") + RecordingInspector.files(under: root, endingWith: ".mp4.partial"))
        .filter { !$0.contains("/.quarantine/") }.sorted()
}

private func completeFragments(_ root: String) -> Int {
    videoFiles(root).reduce(0) { $0 + ((try? FragmentMap(path: $1).fragments.count) ?? 0) }
}

/// The frames a file holds up to its last complete fragment, decoded from a copy (the original
/// is left for recovery to handle).
private func framesOnDisk(_ path: String, scratch: String) throws -> [UInt32?] {
    let copy = scratch + "/copy.mp4"
    try? FileManager.default.removeItem(atPath: copy)
    try FileManager.default.copyItem(atPath: path, toPath: copy)
    try FragmentedMP4.trimToCompleteFragments(copy)
    return try FragmentMap(path: copy).fragments.isEmpty ? [] : RecordingInspector.decode(copy).sequences
}

/// What one kill -9 left, after a restart recovered it.
private struct Trial: Sendable {
    var problems: [String] = []
    var fragmentsBeforeKill = 0
    /// Frames of the killed run on disk (in complete fragments) when it died.
    var framesAtKill = 0
    /// Largest number of frames in one fragment of the killed run: what a kill can cost on disk.
    var largestFragment = 0
    var recovered = false
}

/// Records, is killed with SIGKILL as soon as `fragments` complete fragments are on disk, and
/// is started again (which recovers). Every frame that had reached the disk in a complete
/// fragment must come back, exactly once and in order.
private func killAndRecover(afterFragments fragments: Int) async -> Trial {
    var trial = Trial(fragmentsBeforeKill: fragments)
    guard let dir = try? TemporaryDirectory("vigil-kill") else { return Trial(problems: ["no temporary directory"]) }
    defer { dir.remove() }
    let out = dir.path + "/rec"
    guard let process = try? VigilBinary.start(demo + ["--output", out], in: dir.path) else { return Trial(problems: ["vigil did not start"]) }
    // Watches the disk, not the clock: the cut point is a count of fragments written.
    let reached = await waitUntil(seconds: 30) { !process.isRunning || completeFragments(out) >= fragments }
        && completeFragments(out) >= fragments
    kill(process.processIdentifier, SIGKILL)
    _ = await waitForExit(process, seconds: 10)
    guard reached else { return Trial(problems: ["\(fragments) fragments never reached the disk"]) }

    // What the killed run had on disk, in complete fragments, file by file. (A `.partial`
    // without one complete fragment has nothing to keep: recovery quarantines it.)
    var killedRun: [(file: String, frames: [UInt32?])] = []
    for file in videoFiles(out) {
        do {
            let frames = try framesOnDisk(file, scratch: dir.path)
            if !frames.isEmpty { killedRun.append((file.replacingOccurrences(of: ".partial", with: ""), frames)) }
            trial.largestFragment = max(trial.largestFragment, try FragmentMap(path: file).fragments.map(\.frames).max() ?? 0)
            if file.hasSuffix(".partial") && !frames.isEmpty { trial.recovered = true }
        } catch { trial.problems.append("\(file) unreadable after the kill: \(error)") }
    }
    let atKill = killedRun.flatMap(\.frames)
    trial.framesAtKill = atKill.count

    let restart = RecordingInspector.run(VigilBinary.path, demo + ["--output", out, "--duration", "1"])
    if restart.status != 0 { trial.problems.append("restart failed: \(restart.errorOutput)") }
    if !RecordingInspector.files(under: out + "/synthetic-0", endingWith: ".partial").isEmpty { trial.problems.append("a .partial is left") }

    // The index and the files agree exactly. (A segment killed before its first fragment has
    // nothing to keep: it is moved to .quarantine and its entry says quarantined.)
    let files = Set(RecordingInspector.files(under: out + "/synthetic-0", endingWith: ".mp4")
        + RecordingInspector.files(under: out + "/synthetic-0", endingWith: ".jpg"))
    guard let index = try? RecordingIndex(root: out), let entries = try? index.entries() else {
        trial.problems.append("index unreadable")
        return trial
    }
    let indexed = Set(entries.filter { $0.state != .missing && $0.state != .quarantined }.map { "\(out)/\($0.path)" })
    if indexed != files { trial.problems.append("index and files differ: \(indexed.symmetricDifference(files).sorted())") }
    if entries.contains(where: { $0.state == .writing }) { trial.problems.append("entries left writing") }
    if entries.filter({ $0.state == .missing }).count > 1 { trial.problems.append("more than the open segment is missing") }
    for file in files where RecordingInspector.ffprobeProblem(file) != nil { trial.problems.append("\(file) does not play") }
    // `vigil verify` agrees, reading the packets and decoding them.
    trial.problems += verifyProblems(out)

    // The killed run's files, decoded after recovery, hold exactly what was on disk at the kill:
    // frames 0, 1, 2 … without a gap or a repeat.
    let after = killedRun.flatMap { (try? RecordingInspector.decode($0.file).sequences) ?? [nil] }
    if after != atKill { trial.problems.append("recovery changed the frames on disk: \(atKill.count) before, \(after.count) after") }
    if atKill != (0..<UInt32(atKill.count)).map({ Optional($0) }) { trial.problems.append("not frames 0…\(atKill.count - 1) in order: \(atKill)") }
    return trial
}

@Suite(.serialized) struct CrashRecoveryTests {
    /// docs/operations.md: "A kill costs the open fragment … plus what the encoder holds …: about a second of video at most".
    /// Each kill lands after a seeded number of fragments (1–8, across 2 s segments, so some
    /// land just after a segment boundary); recovery must keep every frame that reached the
    /// disk, and no fragment may hold more than half a second of frames.
    @Test func killDashNineKeepsEveryFrameOnDiskAndFragmentsStayUnderHalfASecond() async throws {
        var random = SeededRandom.fromEnvironment("VIGIL_CRASH_SEED", label: "kill -9 trials")
        var trials: [Trial] = []
        for _ in 0..<12 { trials.append(await killAndRecover(afterFragments: Int.random(in: 1...8, using: &random))) }
        for (n, trial) in trials.enumerated() {
            #expect(trial.problems.isEmpty, "trial \(n) (kill after \(trial.fragmentsBeforeKill) fragments): \(trial.problems)")
            #expect(trial.framesAtKill > 0, "trial \(n): nothing on disk at the kill")
            // Half a second at 15 fps is 7.5 frames: a fragment closes at the first frame past it.
            #expect(trial.largestFragment <= (fps + 1) / 2, "trial \(n): a fragment of \(trial.largestFragment) frames")
        }
        print("kill -9 × \(trials.count) (seed \(random.seed)): every frame in a complete fragment kept; "
            + "largest fragment \(trials.map(\.largestFragment).max() ?? 0) frames at \(fps) fps; "
            + "\(trials.filter(\.recovered).count) kills left a cut-short segment to recover")
    }

    /// A segment cut at an exact, seeded byte inside a fragment (as a crash or power cut leaves
    /// it) is recovered to exactly the frames of its complete fragments, and plays.
    @Test func aSegmentCutMidFragmentIsRecoveredToItsLastCompleteFragment() async throws {
        var random = SeededRandom.fromEnvironment("VIGIL_CRASH_SEED", label: "cut-short segments")
        let dir = try TemporaryDirectory("vigil-cut")
        defer { dir.remove() }
        let source = dir.path + "/source"
        let made = RecordingInspector.run(VigilBinary.path, [
            "demo", "--output", source, "--size", "160x120", "--fps", "\(fps)", "--segment-seconds", "3600",
            "--timelapse-interval", "3600", "--duration", "3",
        ])
        try #require(made.status == 0, "\(made.errorOutput)")
        let original = try #require(videoFiles(source).first)
        let map = try FragmentMap(path: original)
        let frames = try RecordingInspector.decode(original).sequences
        try #require(map.fragments.count >= 3, "\(map.fragments.count) fragments")
        try #require(map.fragments.reduce(0) { $0 + $1.frames } == frames.count)
        let bytes = try Data(contentsOf: URL(fileURLWithPath: original))
        let relative = String(original.dropFirst(source.count))

        for trial in 0..<4 {
            // Cut inside fragment `kept` (0-based), anywhere from its moof's first byte to one
            // byte short of its end: fragments before it survive, it does not.
            let kept = Int.random(in: 1..<map.fragments.count, using: &random)
            let cut = Int.random(in: map.fragments[kept].start..<map.fragments[kept].end, using: &random)
            let root = dir.path + "/cut\(trial)"
            let partial = root + relative + ".partial"
            try FileManager.default.createDirectory(atPath: (partial as NSString).deletingLastPathComponent, withIntermediateDirectories: true)
            try bytes.prefix(cut).write(to: URL(fileURLWithPath: partial))

            let recovery = RecordingInspector.run(VigilBinary.path, demo + ["--output", root, "--duration", "1"])
            #expect(recovery.status == 0, "\(recovery.errorOutput)")
            #expect(!FileManager.default.fileExists(atPath: partial), "cut at byte \(cut): the .partial is left")
            let recovered = root + relative
            let expected = Array(frames.prefix(map.fragments[..<kept].reduce(0) { $0 + $1.frames }))
            #expect(RecordingInspector.ffprobeProblem(recovered) == nil, "cut at byte \(cut) in fragment \(kept): does not play")
            #expect((try? RecordingInspector.decode(recovered).sequences) == expected,
                    "cut at byte \(cut) in fragment \(kept): expected frames 0…\(expected.count - 1)")
            let entry = try RecordingIndex(root: root).entries().first { root + "/" + $0.path == recovered }
            #expect(entry?.state == .recovered && entry?.frames == expected.count, "cut at byte \(cut): index says \(String(describing: entry))")
            let disagreements = verifyProblems(root)
            #expect(disagreements.isEmpty, "cut at byte \(cut): \(disagreements)")
        }
    }
}
