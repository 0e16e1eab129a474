import CaptureTesting
import Foundation
import Glibc
import Media
import Recorder
import Testing

/// What one kill -9 trial left behind, after a restart recovered it.
private struct Trial: Sendable {
    var problems: [String] = []
    /// Seconds between the kill and the capture time of the last frame kept on disk.
    var lossSeconds: Double = .nan
    var recovered = false
}

private func wallNanos() -> Int64 {
    var ts = timespec()
    clock_gettime(CLOCK_REALTIME, &ts)
    return Int64(ts.tv_sec) * 1_000_000_000 + Int64(ts.tv_nsec)
}

/// Records, is killed with SIGKILL at a random moment, and is started again (which recovers).
private func killAndRecover(seed: Int) async -> Trial {
    var trial = Trial()
    guard let dir = try? TemporaryDirectory("vigil-kill") else { return Trial(problems: ["no temporary directory"]) }
    defer { dir.remove() }
    let out = dir.path + "/rec"
    let arguments = ["demo", "--output", out, "--size", "160x120", "--fps", "15", "--segment-seconds", "1", "--timelapse-interval", "1"]
    guard let process = try? VigilBinary.start(arguments, in: dir.path) else { return Trial(problems: ["vigil did not start"]) }
    // Kill at a random point once recording is under way (in a segment, at a boundary, in a still).
    guard await waitUntil(seconds: 30, { !RecordingInspector.files(under: out, endingWith: ".partial").isEmpty }) else {
        process.terminate()
        return Trial(problems: ["never started recording"])
    }
    try? await Task.sleep(nanoseconds: UInt64.random(in: 700_000_000...3_000_000_000))
    let killedAt = wallNanos()
    kill(process.processIdentifier, SIGKILL)
    process.waitUntilExit()
    trial.recovered = !RecordingInspector.files(under: out, endingWith: ".partial").isEmpty

    let restart = RecordingInspector.run(VigilBinary.path, arguments + ["--duration", "1"])
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

    // Every file plays; the killed run's segments hold its frames from the first on, without a
    // gap, up to shortly before the kill.
    for file in files where RecordingInspector.ffprobeProblem(file) != nil { trial.problems.append("\(file) does not play") }
    let killedRun = entries.filter { $0.kind == .segment && $0.state != .missing && $0.startNanos < killedAt }.sorted { $0.startNanos < $1.startNanos }
    let numbers = killedRun.flatMap { (try? RecordingInspector.decode("\(out)/\($0.path)").sequences) ?? [nil] }
    let values = numbers.compactMap { $0 }
    if values.count != numbers.count || values.isEmpty { trial.problems.append("unreadable frames in the killed run") }
    if values != Array((values.first ?? 0)..<(values.first ?? 0) + UInt32(values.count)) { trial.problems.append("a gap or repeat in the killed run: \(values)") }
    if let last = killedRun.last { trial.lossSeconds = Double(killedAt - last.endNanos) / 1e9 }
    _ = seed
    return trial
}

@Suite struct CrashRecoveryTests {
    @Test func killDashNineTwentyTimesLosesAtMostAboutASecondEachTime() async throws {
        var trials: [Trial] = []
        // Four at a time: 20 kills in about half a minute.
        for batch in 0..<5 {
            trials += await withTaskGroup(of: Trial.self) { group in
                for n in 0..<4 { group.addTask { await killAndRecover(seed: batch * 4 + n) } }
                return await group.reduce(into: []) { $0.append($1) }
            }
        }
        #expect(trials.count == 20)
        for (n, trial) in trials.enumerated() {
            #expect(trial.problems.isEmpty, "trial \(n): \(trial.problems)")
            // A fragment is written every half second; with encoder delay and the kill's own
            // timing, what a kill costs stays around one second.
            #expect(trial.lossSeconds <= 1.5, "trial \(n) lost \(trial.lossSeconds) s")
        }
        let losses = trials.map(\.lossSeconds).sorted()
        print("kill -9 × \(trials.count): loss median \(losses[losses.count / 2]) s, max \(losses.last!) s; "
            + "\(trials.filter(\.recovered).count) kills left a cut-short segment to recover")
        #expect(trials.filter(\.recovered).count >= 10, "most kills should land inside a segment")
    }
}
