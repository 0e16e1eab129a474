import CaptureTesting
import Foundation
import Testing

@Suite(.timeLimit(.minutes(2))) struct TimelapseCommandTests {
    @Test func buildsAVideoFromADemosStillsSkippingACorruptOne() throws {
        let dir = try TemporaryDirectory()
        defer { dir.remove() }
        let data = dir.path + "/rec"
        let demo = VigilBinary.run([
            "demo", "--output", data, "--duration", "5", "--size", "160x120", "--fps", "10", "--timelapse-interval", "1",
        ])
        #expect(demo.status == 0, "\(demo.errorOutput)")
        let stills = RecordingInspector.files(under: data + "/synthetic-0/stills", endingWith: ".jpg").sorted()
        #expect(stills.count >= 3)
        // One still is damaged: it is skipped, the rest are assembled in order.
        try Data("not a jpeg".utf8).write(to: URL(fileURLWithPath: stills[1]))
        let out = dir.path + "/out.mp4"
        let result = VigilBinary.run([
            "timelapse", "build", "--camera", "synthetic-0", "--from", "yesterday", "--to", "today", "--fps", "10", "--data", data, "-o", out,
        ])
        #expect(result.status == 0, "\(result.errorOutput)")
        #expect(result.output.contains("Wrote \(out): \(stills.count - 1) frames") && result.output.contains("1 unreadable still(s) skipped"), "\(result.output)")
        #expect(result.errorOutput.contains("100%"))
        #expect(RecordingInspector.ffprobeProblem(out) == nil)
        let decoded = try RecordingInspector.decode(out)
        #expect(decoded.sequences.count == stills.count - 1 && decoded.startsWithKeyframe)
        let numbers = decoded.sequences.compactMap { $0 }
        #expect(numbers.count == stills.count - 1 && zip(numbers, numbers.dropFirst()).allSatisfy { $0 < $1 }, "\(numbers)")
        #expect(!FileManager.default.fileExists(atPath: out + ".partial"))
    }

    @Test func aRangeWithoutStillsSaysSo() throws {
        let dir = try TemporaryDirectory()
        defer { dir.remove() }
        let result = VigilBinary.run(["timelapse", "build", "--camera", "porch", "--from", "2020-01-01", "--to", "2020-01-02", "--data", dir.path, "-o", dir.path + "/x.mp4"])
        #expect(result.status == 1 && result.errorOutput.contains("no stills of camera porch"), "\(result.errorOutput)")
        let bad = VigilBinary.run(["timelapse", "build", "--camera", "porch", "--from", "soon", "--to", "today", "-o", "x.mp4"])
        #expect(bad.status != 0 && bad.errorOutput.contains("--from soon is not a time"))
    }
}
