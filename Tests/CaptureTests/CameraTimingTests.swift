@testable import Capture
import CaptureTesting
import Foundation
import Media
import Testing

/// What a file says about time is what the camera saw, for every kind of camera at 5, 10,
/// 12.5, 15 and 30 fps: each file's duration is its frames ÷ the rate within one frame, files
/// start on the wall-clock grid (2 s) within about a frame interval, there is no gap between
/// them and no cut off the grid. HTTP MJPEG was recorded at libavformat's invented 25 fps (a
/// 10 fps camera's 5 s of frames made a "2 s" file that played 2.5× fast, cut every ~5 s).
/// H.264/H.265 cameras send a keyframe every frame here, so a file can start at the first
/// frame of its slot (with longer GOPs it starts at the slot's first keyframe).
@Suite(.serialized, .timeLimit(.minutes(5))) struct CameraTimingTests {
    static let rates: [Double] = [5, 10, 12.5, 15, 30]
    static let segmentSeconds = 2

    @Test(arguments: rates) func httpMJPEG(fps: Double) async throws {
        let jpegDir = try TemporaryDirectory()
        defer { jpegDir.remove() }
        let pattern = "\(jpegDir.path)/frame%d.jpg"
        let made = RecordingInspector.run("/usr/bin/env", ["ffmpeg", "-v", "error", "-f", "lavfi", "-i", "testsrc=size=160x120:rate=15", "-frames:v", "10", pattern])
        #expect(made.status == 0, "\(made.errorOutput)")
        let server = try LoopbackCameraServer.mjpeg(jpegs: (1...10).map { "\(jpegDir.path)/frame\($0).jpg" }, fps: fps)
        defer { server.stop() }
        try await expectTrueTimes(NetworkCamera.device(id: "porch", url: server.mjpegURL, settings: NetworkCameraTests.fast), fps: fps, encoding: .streamCopy)
    }

    @Test(arguments: ["h264", "h265"], rates) func rtsp(codec: String, fps: Double) async throws {
        let server = try LoopbackCameraServer.rtsp(codec: codec, gop: 1, fps: fps)
        defer { server.stop() }
        try await expectTrueTimes(NetworkCamera.device(id: "porch", url: server.url(), settings: NetworkCameraTests.fast), fps: fps, encoding: .streamCopy)
    }

    /// Long files of an RTSP camera are true from the first: the client holds the first
    /// keyframe while it looks ahead at the next pictures, and the camera clock was anchored
    /// where that keyframe was handed over, not where it arrived, so the times of the first
    /// minute ran up to the look-ahead ahead and were slewed back (1 %): 30 fps files of 10 s
    /// came out 3 frames short (60 s files: up to 6 frames at 10 fps, `Scripts/bench-timing`).
    @Test func longRTSPFilesAreTrueFromTheFirst() async throws {
        let server = try LoopbackCameraServer.rtsp(codec: "h264", gop: 30, fps: 30)
        defer { server.stop() }
        let dir = try TemporaryDirectory()
        defer { dir.remove() }
        let movie = try SegmentedMovieOutput(.init(storageRoot: dir.path, segmentSeconds: 10, encoding: .streamCopy))
        let device = NetworkCamera.device(id: "porch", url: server.url(), settings: NetworkCameraTests.fast)
        let (session, log) = try startSession(device: device, format: .preset(.low), fps: 30, outputs: [(movie, .init())])
        #expect(await waitUntil(seconds: 40) { log.segments.count >= 2 }, "\(log.errors)")
        await stopAndDrain(session, log)
        let interval = 1e9 / 30
        for s in log.segments.sorted(by: { $0.firstFrameWallNanos < $1.firstFrameWallNanos }).prefix(2) {
            let times = Self.packetTimes(s.path)
            guard let first = times.first, let last = times.last else { continue }
            let duration = (last - first) * 1e9 + interval
            #expect(abs(duration - Double(times.count) * interval) <= interval, "\(s.path): \(times.count) frames last \(duration / 1e9) s")
        }
    }

    @Test(arguments: rates) func synthetic(fps: Double) async throws {
        try await expectTrueTimes(SyntheticCamera.device(), fps: fps, encoding: .h264(EncoderSettings(preset: "ultrafast")))
    }

    @Test(arguments: rates) func emulatedV4L2(fps: Double) async throws {
        let kernel = EmulatedV4L2([EmulatedCamera(formats: [EmulatedCamera.Format(.mjpeg, sizes: [(160, 120)], frameRates: [fps])])])
        let device = try #require(V4L2Discovery(system: kernel).devices().first)
        try await expectTrueTimes(device, fps: fps, encoding: .streamCopy, format: .size(width: 160, height: 120, pixelFormat: .mjpeg))
    }

    /// Motion on an HTTP MJPEG camera at 10 fps is placed when the scene changed: a box starts
    /// crossing a still scene 3 s into the camera's loop (the server logs when it sent that
    /// frame); the event starts within 0.5 s of it. With libavformat's 25 fps times it was up to 2.7 s off.
    @Test func motionOnAnHTTPCameraIsTimedAsTheSceneChanged() async throws {
        let dir = try TemporaryDirectory()
        defer { dir.remove() }
        func jpeg(_ name: String, _ filter: String) -> String {
            let made = RecordingInspector.run("/usr/bin/env", ["ffmpeg", "-v", "error", "-f", "lavfi", "-i", "color=gray:size=160x120:rate=10,\(filter)", "-frames:v", "1", "\(dir.path)/\(name).jpg"])
            #expect(made.status == 0, "\(made.errorOutput)")
            return "\(dir.path)/\(name).jpg"
        }
        // 3 s of a still scene, then 2 s of a box crossing it.
        let still = Array(repeating: jpeg("still", "null"), count: 30)
        let box = (0..<20).map { jpeg("box\($0)", "drawbox=x=\($0 * 6):y=30:w=40:h=60:color=white:t=fill") }
        let sent = dir.path + "/sent.log"
        let server = try LoopbackCameraServer.mjpeg(jpegs: still + box, fps: 10, log: sent)
        defer { server.stop() }
        var settings = MotionSettings()
        settings.gapSeconds = 1
        let motion = MotionOutput(.init(motion: settings, storageRoot: dir.path))
        let device = NetworkCamera.device(id: "yard", url: server.mjpegURL, settings: NetworkCameraTests.fast)
        let (session, log) = try startSession(device: device, format: .preset(.low), fps: 10, outputs: [(motion, .init())])
        let starts = { log.all.compactMap { if case .motionStarted(_, let start) = $0 { start } else { nil } } }
        #expect(await waitUntil(seconds: 30) { !starts().isEmpty })
        await stopAndDrain(session, log)
        // The first time the box was sent.
        let lines = (try String(contentsOfFile: sent, encoding: .utf8)).split(separator: "\n")
        let boxSent = try #require(lines.first { $0.hasPrefix("30 ") }.flatMap { Double($0.split(separator: " ")[1]) })
        let start = try #require(starts().first)
        let off = Double(start) / 1e9 - boxSent
        #expect(abs(off) < 0.5, "the event starts \(off) s from the scene's change")
    }

    /// Records `device` until three files are finished, then checks each file's packet times.
    func expectTrueTimes(
        _ device: CaptureDevice, fps: Double, encoding: SegmentedMovieOutput.Encoding,
        format: FormatRequest = .preset(.low), sourceLocation: SourceLocation = #_sourceLocation
    ) async throws {
        let dir = try TemporaryDirectory()
        defer { dir.remove() }
        let movie = try SegmentedMovieOutput(.init(storageRoot: dir.path, segmentSeconds: Self.segmentSeconds, encoding: encoding))
        let (session, log) = try startSession(device: device, format: format, fps: fps, outputs: [(movie, .init())])
        #expect(await waitUntil(seconds: 60) { log.segments.count >= 3 }, "\(log.errors)", sourceLocation: sourceLocation)
        await stopAndDrain(session, log)
        let segments = log.segments.sorted { $0.firstFrameWallNanos < $1.firstFrameWallNanos }
        let interval = 1e9 / fps
        let gridNanos = Int64(Self.segmentSeconds) * 1_000_000_000
        for (index, s) in segments.enumerated() {
            let times = Self.packetTimes(s.path)
            // The first and last files may hold one frame: the camera's first frame came in the
            // last interval of its slot (at 5 fps one start in ten), or the stop just after the
            // last slot began.
            #expect(times.count == s.frameCount && (times.count > 1 || index == 0 || index == segments.count - 1), "\(s.path) (\(index + 1) of \(segments.count)): \(times.count) packets of \(s.frameCount) frames", sourceLocation: sourceLocation)
            guard let first = times.first, let last = times.last else { continue }
            // Duration as a player sees it: from the first frame to the end of the last.
            let duration = (last - first) * 1e9 + interval
            let expected = Double(times.count) * interval
            #expect(abs(duration - expected) <= interval, "\(fps) fps, \(s.path): \(times.count) frames last \(duration / 1e9) s, not \(expected / 1e9) s", sourceLocation: sourceLocation)
            // Every file but the first starts at the first frame of its slot of the grid.
            if index > 0 {
                let intoSlot = Double(s.firstFrameWallNanos % gridNanos)
                #expect(intoSlot <= interval * 1.5, "\(fps) fps, \(s.path) starts \(intoSlot / 1e6) ms into its slot", sourceLocation: sourceLocation)
            }
        }
        // No gap and no cut off the grid: each file follows the one before by one frame, in the next slot.
        for (a, b) in zip(segments, segments.dropFirst()) {
            let between = Double(b.firstFrameWallNanos - a.lastFrameWallNanos)
            #expect(between > 0 && between <= interval * 1.5, "\(fps) fps: \(between / 1e6) ms between \(a.path) and \(b.path)", sourceLocation: sourceLocation)
            #expect(b.firstFrameWallNanos / gridNanos == a.firstFrameWallNanos / gridNanos + 1, "\(fps) fps: \(b.path) is not in the slot after \(a.path)", sourceLocation: sourceLocation)
        }
        let measured = session.measuredFrameRate ?? 0
        #expect(abs(measured - fps) < fps * 0.05, "\(fps) fps measured as \(measured)", sourceLocation: sourceLocation)
    }

    /// The presentation times (seconds) of a file's video packets in presentation order, read
    /// by ffprobe (a reader other than the code under test).
    static func packetTimes(_ path: String) -> [Double] {
        let r = RecordingInspector.run("/usr/bin/ffprobe", ["-v", "error", "-select_streams", "v", "-show_entries", "packet=pts_time", "-of", "csv=p=0", path])
        return r.output.split(separator: "\n").compactMap { Double($0.trimmingCharacters(in: .whitespaces).trimmingCharacters(in: CharacterSet(charactersIn: ","))) }.sorted()
    }
}
