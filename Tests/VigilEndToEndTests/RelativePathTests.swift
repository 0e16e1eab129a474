import CaptureTesting
import Foundation
import Testing

/// Runs `vigil` in `directory` with the time zone `zone`, as a user in a shell would.
private func vigil(in directory: String, zone: String = "UTC", _ arguments: [String]) -> (status: Int32, output: String, errorOutput: String) {
    RecordingInspector.run("/usr/bin/env", ["-C", directory, "TZ=\(zone)", VigilBinary.path] + arguments)
}

@Suite struct RelativePathTests {
    /// `-o clip.mp4` has no directory part: the file was written, then fsyncing the directory
    /// "" failed and the command said "open : No such file or directory" with exit 1.
    @Test func everyCommandWritesToPathsRelativeToTheWorkingDirectory() throws {
        let dir = try TemporaryDirectory()
        defer { dir.remove() }
        let demo = vigil(in: dir.path, ["demo", "-o", "rec", "--duration", "3.5", "--size", "160x120", "--fps", "10",
                                        "--segment-seconds", "1", "--timelapse-interval", "1"])
        #expect(demo.status == 0, "\(demo.errorOutput)")
        let segments = RecordingInspector.files(under: dir.path + "/rec", endingWith: ".mp4").sorted()
        let stills = RecordingInspector.files(under: dir.path + "/rec/synthetic-0/stills", endingWith: ".jpg")
        try #require(segments.count >= 2 && stills.count >= 2, "\(demo.output)")

        let export = vigil(in: dir.path, ["export", "--data", "rec", "--camera", "synthetic-0", "--from", "yesterday", "--to", "today", "-o", "clip.mp4"])
        #expect(export.status == 0 && export.output.contains("Wrote clip.mp4"), "\(export.errorOutput)")
        let joined = try RecordingInspector.decode(dir.path + "/clip.mp4").sequences.compactMap { $0 }
        let separate = try segments.flatMap { try RecordingInspector.decode($0).sequences.compactMap { $0 } }
        #expect(joined == separate && !joined.isEmpty)

        let timelapse = vigil(in: dir.path, ["timelapse", "build", "--data", "./rec", "--camera", "synthetic-0", "--from", "yesterday", "--to", "today",
                                             "--fps", "10", "-o", "timelapse.mp4"])
        #expect(timelapse.status == 0, "\(timelapse.errorOutput)")
        #expect(try RecordingInspector.decode(dir.path + "/timelapse.mp4").sequences.count == stills.count)
        #expect(!FileManager.default.fileExists(atPath: dir.path + "/clip.mp4.partial"))
        #expect(!FileManager.default.fileExists(atPath: dir.path + "/timelapse.mp4.partial"))
    }

    /// A time `vigil recordings` prints is taken back by `vigil export`, even from a shell in
    /// another time zone: the printed time carries its offset.
    @Test func aTimeThatRecordingsPrintsIsAcceptedByExport() throws {
        let dir = try TemporaryDirectory()
        defer { dir.remove() }
        let demo = vigil(in: dir.path, zone: "Asia/Kolkata", ["demo", "-o", "rec", "--duration", "3.5", "--size", "160x120", "--fps", "10", "--segment-seconds", "1"])
        #expect(demo.status == 0, "\(demo.errorOutput)")
        let listing = vigil(in: dir.path, zone: "Asia/Kolkata", ["recordings", "--data", "rec"])
        #expect(listing.status == 0, "\(listing.errorOutput)")
        // "  2026-11-22T21:51:41+05:30 → 2026-11-22T21:51:42+05:30      10 frames  …  synthetic-0/video/…mp4"
        let rows = listing.output.split(separator: "\n").map { $0.split(separator: " ") }.filter { $0.count > 4 && $0[1] == "→" }
        let second = try #require(rows.dropFirst().first, "\(listing.output)")
        #expect(second[0].hasSuffix("+05:30"), "the zone is printed: \(second[0])")
        let (from, to, path) = (String(second[0]), String(second[2]), String(second.last!))

        let export = vigil(in: dir.path, zone: "America/New_York", ["export", "--data", "rec", "--camera", "synthetic-0", "--from", from, "--to", to, "-o", "one.mp4"])
        #expect(export.status == 0, "\(export.errorOutput)")
        let exported = try RecordingInspector.decode(dir.path + "/one.mp4").sequences.compactMap { $0 }
        let segment = try RecordingInspector.decode(dir.path + "/rec/" + path).sequences.compactMap { $0 }
        #expect(!segment.isEmpty && Set(segment).isSubset(of: Set(exported)), "all of the listed segment is exported: \(exported) vs \(segment)")

        let recordings = vigil(in: dir.path, zone: "America/New_York", ["recordings", "--data", "rec", "--from", from, "--to", to])
        #expect(recordings.status == 0 && recordings.output.contains(path), "\(recordings.output)\(recordings.errorOutput)")
    }
}
