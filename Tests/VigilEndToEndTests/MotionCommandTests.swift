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

    /// `vigil demo --motion` films a square crossing from 2 s to 5 s of every 10 s; `vigil
    /// events` lists what detection made of it, as text and JSON, with the event's picture.
    @Test func theMotionDemoMakesAnEventThatVigilEventsLists() throws {
        let dir = try TemporaryDirectory()
        defer { dir.remove() }
        let data = dir.path + "/rec"
        let demo = VigilBinary.run(["demo", "--motion", "--output", data, "--duration", "8", "--size", "320x240", "--fps", "10", "--listen", ""])
        #expect(demo.status == 0, "\(demo.errorOutput)")
        #expect(demo.output.contains("vigil events --data \(data)"), "\(demo.output)")
        let text = VigilBinary.run(["events", "--data", data])
        #expect(text.status == 0 && text.output.contains("synthetic-scene-0: 1 motion event(s)"), "\(text.output)")
        let json = VigilBinary.run(["events", "--data", data, "--json", "--camera", "synthetic-scene-0"])
        let parsed = try JSONSerialization.jsonObject(with: Data(json.output.utf8)) as? [String: Any]
        let events = parsed?["events"] as? [[String: Any]] ?? []
        try #require(events.count == 1, "\(json.output)")
        // The scene's zero is the camera's first frame, which starts the first segment.
        let recordings = VigilBinary.run(["recordings", "--data", data, "--json"])
        let segments = (try JSONSerialization.jsonObject(with: Data(recordings.output.utf8)) as? [String: Any])?["recordings"] as? [[String: Any]] ?? []
        let first = try #require(segments.first?["start"] as? String)
        let formatter = ISO8601DateFormatter()
        formatter.formatOptions = [.withInternetDateTime, .withFractionalSeconds]
        let zero = try #require(formatter.date(from: first))
        let start = try #require(formatter.date(from: events[0]["start"] as? String ?? ""))
        let end = try #require(formatter.date(from: events[0]["end"] as? String ?? ""))
        #expect(abs(start.timeIntervalSince(zero) - 2) <= 0.5 && abs(end.timeIntervalSince(zero) - 5) <= 0.5, "\(json.output) \(first)")
        let picture = try #require(events[0]["picture"] as? String)
        #expect(RecordingInspector.ffprobeProblem(data + "/" + picture) == nil)
        let none = VigilBinary.run(["events", "--data", data, "--from", "2020-01-01", "--to", "2020-01-02"])
        #expect(none.status == 0 && none.output == "No motion events in that range.\n")
    }

    /// `--camera`: a configured camera watched live with its [[motion]] table. The synthetic
    /// camera's bar crosses the lower half all the time; its upper half is masked.
    @Test func aConfiguredCameraIsWatchedLiveWithItsMotionTable() throws {
        let dir = try TemporaryDirectory()
        defer { dir.remove() }
        let config = dir.path + "/vigil.toml"
        try """
            [storage]
            root = "\(dir.path)/data"
            [cameras.test]
            device = "synthetic-0"
            size = "320x240"
            fps = 10
            [[motion]]
            camera = "test"
            mask = ["0,0 100%,0 100%,50% 0,50%"]
            """.write(toFile: config, atomically: true, encoding: .utf8)
        let picture = dir.path + "/seen.jpg"
        let run = VigilBinary.run(["motion", "test", "--camera", "test", "--config", config, "--seconds", "3", "--picture", picture])
        #expect(run.status == 0, "\(run.errorOutput)")
        #expect(run.output.contains("Watching camera test for 3 s with its [[motion]] settings"), "\(run.output)")
        #expect(run.output.contains(" MOTION"), "\(run.output)")
        #expect(run.output.contains("one still under way when the test ended"), "\(run.output)")
        #expect(RecordingInspector.ffprobeProblem(picture) == nil)
        #expect(!FileManager.default.fileExists(atPath: dir.path + "/data"), "nothing is recorded")
        let unknown = VigilBinary.run(["motion", "test", "--camera", "tset", "--config", config, "--seconds", "1"])
        #expect(unknown.status == 1 && unknown.errorOutput.contains("no camera named tset") && unknown.errorOutput.contains("did you mean test?"), "\(unknown.errorOutput)")
    }
}
