import CaptureTesting
import Foundation
import Testing

/// `vigil motion test FILE` on a file ffmpeg draws: a noisy grey picture that a white square
/// crosses from 2 s to 5 s.
@Suite struct MotionCommandTests {
    private func scene(_ dir: TemporaryDirectory) throws -> String {
        let file = dir.path + "/square.mp4"
        let made = RecordingInspector.run("/usr/bin/ffmpeg", [
            "-v", "error", "-f", "lavfi", "-i",
            "color=c=gray:s=320x240:r=15:d=8,noise=alls=8:allf=t[bg];color=c=white:s=48x48:r=15:d=8[box];[bg][box]overlay=x='if(between(t,2,5),20+(t-2)*70,-100)':y=90:shortest=1",
            "-c:v", "libx264", "-preset", "ultrafast", "-pix_fmt", "yuv420p", file,
        ])
        try #require(made.status == 0, "\(made.errorOutput)")
        return file
    }

    @Test func printsTheEventAndWritesThePictureOfWhatChanged() throws {
        let dir = try TemporaryDirectory()
        defer { dir.remove() }
        let file = try scene(dir)
        let picture = dir.path + "/changed.jpg"
        let run = VigilBinary.run(["motion", "test", file, "--gap-seconds", "1", "--picture", picture])
        #expect(run.status == 0, "\(run.errorOutput)")
        #expect(run.output.contains("1 event(s):"), "\(run.output)")
        let times = run.output.split(separator: "\n").first { $0.contains(" s – ") }.map {
            $0.split(whereSeparator: { !"0123456789.".contains($0) }).compactMap { Double($0) }
        } ?? []
        #expect(times.count >= 2 && abs(times[0] - 2) <= 0.5 && abs(times[1] - 5) <= 0.5, "\(run.output)")
        #expect(RecordingInspector.ffprobeProblem(picture) == nil)
    }

    @Test func aMaskOverThePathHidesItAndABadMaskIsAnError() throws {
        let dir = try TemporaryDirectory()
        defer { dir.remove() }
        let file = try scene(dir)
        let masked = VigilBinary.run(["motion", "test", file, "--gap-seconds", "1", "--mask", "0,30% 100%,30% 100%,70% 0,70%"])
        #expect(masked.status == 0 && masked.output.contains("No motion event."), "\(masked.output)")
        let bad = VigilBinary.run(["motion", "test", file, "--mask", "0,0 50%"])
        #expect(bad.status == 64 && bad.errorOutput.contains("is not a polygon"), "\(bad.errorOutput)")
        let missing = VigilBinary.run(["motion", "test", dir.path + "/none.mp4"])
        #expect(missing.status == 64 && missing.errorOutput.contains("cannot read"), "\(missing.errorOutput)")
    }
}
