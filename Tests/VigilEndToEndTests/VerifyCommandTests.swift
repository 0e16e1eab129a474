import CaptureTesting
import Foundation
import Glibc
import Recorder
import Testing

/// `vigil verify` and `vigil verify --deep` on `root`: what each says when the index and the
/// files differ (empty when both are clean). Fault tests end with it.
func verifyProblems(_ root: String) -> [String] {
    [[], ["--deep"]].compactMap { extra in
        let run = VigilBinary.run(["verify", "--data", root] + extra)
        return run.status == 0 ? nil : "verify \(extra.joined()) exited \(run.status): \(run.output)\(run.errorOutput)"
    }
}

@Suite(.timeLimit(.minutes(3))) struct VerifyCommandTests {
    private struct Problem: Decodable, Hashable {
        let camera, path, problem, detail: String
    }

    /// A verify that cannot fail is worthless: each kind of damage is made once (a file deleted,
    /// one added, one truncated; in SQLite an entry's frames and end, another's state, another's
    /// picture size), and verify must
    /// name each damaged file with what differs, and nothing else, in text and JSON, with and
    /// without --deep.
    @Test func verifyIsCleanAfterARecordingAndFindsEachKindOfDamage() throws {
        let dir = try TemporaryDirectory("vigil-verify")
        defer { dir.remove() }
        let root = dir.path + "/rec"
        let made = VigilBinary.run([
            "demo", "--output", root, "--size", "160x120", "--fps", "15", "--segment-seconds", "1", "--timelapse-interval", "1", "--duration", "6",
        ])
        try #require(made.status == 0, "\(made.errorOutput)")

        let clean = VigilBinary.run(["verify", "--data", root])
        #expect(clean.status == 0, "\(clean.output)\(clean.errorOutput)")
        #expect(clean.output.hasPrefix("All ") && clean.output.contains("agree with the index"), "\(clean.output)")
        let deep = VigilBinary.run(["verify", "--data", root, "--deep", "--json"])
        #expect(deep.status == 0 && deep.output == "[]\n", "\(deep.output)\(deep.errorOutput)")

        let index = try RecordingIndex(root: root)
        let segments = try index.entries(kind: .segment)
        try #require(segments.count >= 6, "\(segments.map(\.path))")
        #expect(segments.allSatisfy { $0.state == .complete }, "\(segments.map(\.state))")
        func absolute(_ relative: String) -> String { "\(root)/\(relative)" }
        // 1. A file the index lists is deleted.
        let deleted = segments[0].path
        try FileManager.default.removeItem(atPath: absolute(deleted))
        // 2. A recording the index does not list (named like one of the same second).
        let unindexed = String(segments[1].path.dropLast(".mp4".count)) + "_07.mp4"
        try FileManager.default.copyItem(atPath: absolute(segments[1].path), toPath: absolute(unindexed))
        // 3. A file cut to half its size.
        let truncated = segments[2].path
        try #require(Glibc.truncate(absolute(truncated), off_t(segments[2].bytes / 2)) == 0)
        // 4. An entry whose frame count and end are changed in SQLite (the end 0.6 s late, as a
        //    full disk left them before).
        let altered = segments[3].path
        // 5. An entry listed as missing whose file is there, and one with another picture size.
        let stateless = segments[4].path, resized = segments[5].path
        let sql = "UPDATE recordings SET frames = frames + 8, end_ns = end_ns + 600000000 WHERE path = '\(altered)';"
            + "UPDATE recordings SET state = 'missing' WHERE path = '\(stateless)';"
            + "UPDATE recordings SET width = 0, height = 0 WHERE path = '\(resized)'"
        let update = RecordingInspector.run("/usr/bin/sqlite3", [root + "/vigil-index.sqlite3", sql])
        try #require(update.status == 0, "\(update.errorOutput)")

        let expected: Set<String> = [
            "\(deleted) missing", "\(unindexed) unindexed", "\(truncated) size", "\(altered) frames", "\(altered) times",
            "\(stateless) state", "\(resized) description",
        ]
        let damaged: Set<String> = [deleted, unindexed, truncated, altered, stateless, resized]
        for deep in [false, true] {
            let text = VigilBinary.run(["verify", "--data", root] + (deep ? ["--deep"] : []))
            #expect(text.status == 1, "\(text.errorOutput)")
            let lines = text.output.split(separator: "\n").dropLast().map(String.init)
            for problem in expected {
                let parts = problem.split(separator: " ")
                #expect(lines.contains { $0.hasPrefix("\(parts[0]): \(parts[1]): ") }, "deep \(deep): no line for \(problem) in \(text.output)")
            }
            // Nothing else is named: the truncated file may also hold fewer frames or not read at all.
            let named = Set(lines.map { String($0.prefix { $0 != ":" }) })
            #expect(named == damaged, "deep \(deep): \(text.output)")
            #expect(text.output.split(separator: "\n").last?.contains("problem(s) among") == true, "\(text.output)")

            let json = VigilBinary.run(["verify", "--data", root, "--json"] + (deep ? ["--deep"] : []))
            #expect(json.status == 1)
            let problems = try JSONDecoder().decode([Problem].self, from: Data(json.output.utf8))
            let found = Set(problems.map { "\($0.path) \($0.problem)" })
            #expect(found.isSuperset(of: expected), "deep \(deep): \(found)")
            #expect(Set(problems.map(\.path)) == damaged)
            #expect(problems.allSatisfy { $0.camera == "synthetic-0" && !$0.detail.isEmpty })
            let frames = try #require(problems.first { $0.path == altered && $0.problem == "frames" })
            #expect(frames.detail.contains("\(segments[3].frames + 8) frames") && frames.detail.contains("\(segments[3].frames)"), "\(frames.detail)")
        }

        // Another camera, and a time range before the recording, have nothing wrong.
        #expect(VigilBinary.run(["verify", "--data", root, "--camera", "porch"]).status == 0)
        #expect(VigilBinary.run(["verify", "--data", root, "--to", "2001-01-01"]).status == 0)
        // Usage errors are 64, like every command's; a root without an index is 1.
        #expect(VigilBinary.run(["verify", "--data", root, "--from", "yesterday-ish"]).status == 64)
        #expect(VigilBinary.run(["verify", "--data", root, "--from", "2026-11-22", "--to", "2026-11-21"]).status == 64)
        let empty = VigilBinary.run(["verify", "--data", dir.path + "/nothing"])
        #expect(empty.status == 1 && empty.errorOutput.contains("\(dir.path)/nothing does not exist"), "\(empty.errorOutput)")
    }

    @Test func helpDescribesVerify() {
        let top = VigilBinary.run(["--help"])
        #expect(top.output.contains("verify") && top.output.contains("Check that the recordings index and the files agree"))
        let help = VigilBinary.run(["verify", "--help"])
        for option in ["--camera", "--from", "--to", "--deep", "--json", "--data"] { #expect(help.output.contains(option), "\(option)") }
        #expect(help.output.contains("unindexed") && help.output.contains("Exits 0"))
    }
}
