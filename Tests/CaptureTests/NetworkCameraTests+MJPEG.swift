@testable import Capture
import CaptureTesting
import Foundation
import Media
import RTSP
import Testing

extension NetworkCameraTests {
    func makeJPEGs(in dir: TemporaryDirectory, source: String = "testsrc=size=160x120:rate=15", count: Int = 15) -> [String] {
        let pattern = "\(dir.path)/frame%d.jpg"
        let r = RecordingInspector.run("/usr/bin/env", [
            "ffmpeg", "-v", "error", "-f", "lavfi", "-i", source, "-frames:v", "\(count)", "-q:v", "2", pattern])
        #expect(r.status == 0, "\(r.errorOutput)")
        return (1...count).map { "\(dir.path)/frame\($0).jpg" }
    }

    /// Frames larger than a network frame's first buffer (512 KiB): picture noise at high
    /// quality gives JPEGs of about 800 KB, assembled from many reads into a buffer that grows.
    @Test func framesLargerThanTheirFirstBufferAreRecordedWhole() async throws {
        let jpegDir = try TemporaryDirectory()
        defer { jpegDir.remove() }
        let jpegs = makeJPEGs(
            in: jpegDir, source: "nullsrc=s=1280x720:rate=15,geq=lum='random(1)*255':cb=128:cr=128", count: 5)
        let sizes = jpegs.map { (try? FileManager.default.attributesOfItem(atPath: $0)[.size] as? Int) ?? 0 }
        #expect(sizes.allSatisfy { $0 > 512 * 1024 }, "\(sizes)")
        let server = try LoopbackCameraServer.mjpeg(jpegs: jpegs)
        defer { server.stop() }
        let dir = try TemporaryDirectory()
        defer { dir.remove() }
        let (session, log, movie) = try record(server.mjpegURL, into: dir)
        #expect(await waitUntil(seconds: 30) { log.segments.count >= 2 })
        await stopAndDrain(session, log)
        try expectPlayableAndContiguous(log, codec: "mjpeg", width: 1280, height: 720)
        #expect(log.segments.map(\.frameCount).reduce(0, +) == movie.receivedFrameCount)
        #expect(movie.receivedFrameCount >= 15)
    }

    @Test func recordsHTTPMJPEGAsIs() async throws {
        let jpegDir = try TemporaryDirectory()
        defer { jpegDir.remove() }
        let server = try LoopbackCameraServer.mjpeg(jpegs: makeJPEGs(in: jpegDir))
        defer { server.stop() }
        let dir = try TemporaryDirectory()
        defer { dir.remove() }
        let (session, log, movie) = try record(server.mjpegURL, into: dir)
        #expect(await waitUntil(seconds: 30) { log.segments.count >= 3 })
        await stopAndDrain(session, log)
        try expectPlayableAndContiguous(log, codec: "mjpeg")
        let segments = log.segments.sorted { $0.firstFrameWallNanos < $1.firstFrameWallNanos }
        expectGapless(segments)
        #expect(segments.allSatisfy { $0.path.hasSuffix(".mkv") })
        #expect(segments.map(\.frameCount).reduce(0, +) == movie.receivedFrameCount)
    }

    /// A camera named by its host rather than its address records through each way in: Vigil's
    /// client (the name looked up on a thread of its own), and libavformat (RTSP over UDP, HTTP
    /// MJPEG), which is handed the address looked up first, an HTTP camera its name as Host.
    @Test(arguments: ["rtsp", "rtsp-udp", "http"]) func aCameraNamedByItsHostRecords(_ way: String) async throws {
        let jpegDir = try TemporaryDirectory()
        defer { jpegDir.remove() }
        let server = way == "http" ? try LoopbackCameraServer.mjpeg(jpegs: makeJPEGs(in: jpegDir)) : try LoopbackCameraServer.rtsp()
        defer { server.stop() }
        let url = (way == "http" ? server.mjpegURL : server.url()).replacingOccurrences(of: "127.0.0.1", with: "localhost")
        let dir = try TemporaryDirectory()
        defer { dir.remove() }
        var settings = Self.fast
        if way == "rtsp-udp" { settings.transport = .udp }
        let (session, log, _) = try record(url, settings: settings, into: dir)
        #expect(await waitUntil(seconds: 30) { log.segments.count >= 2 }, "\(log.interruptions)")
        await stopAndDrain(session, log)
        try expectPlayableAndContiguous(log, codec: way == "http" ? "mjpeg" : "h264")
    }

    @Test func mjpegConnectionClosedMidFrame() async throws {
        let jpegDir = try TemporaryDirectory()
        defer { jpegDir.remove() }
        let server = try LoopbackCameraServer.mjpeg(jpegs: makeJPEGs(in: jpegDir), cutAfter: 20)
        defer { server.stop() }
        let dir = try TemporaryDirectory()
        defer { dir.remove() }
        let (session, log, _) = try record(server.mjpegURL, into: dir)
        // Each connection ends inside its 21st frame; the camera is reconnected each time.
        #expect(await waitUntil(seconds: 30) { log.resumptions >= 2 }, "\(log.interruptions)")
        await stopAndDrain(session, log)
        #expect(log.interruptions.contains { $0.contains("stream ended") }, "\(log.interruptions)")
        try expectPlayableAndContiguous(log, codec: "mjpeg")
    }
}
