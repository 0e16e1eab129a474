import Foundation
import Glibc

/// A test server process (RTSP through gst-rtsp-server, or HTTP MJPEG) on loopback, started
/// with Debian's /usr/bin/python3 (a pyenv python on PATH lacks `gi`). Killed when the test ends.
public final class LoopbackCameraServer: Sendable {
    private let server: PythonTestServer
    public let port: Int

    static let directory = URL(fileURLWithPath: #filePath).deletingLastPathComponent().appendingPathComponent("Servers").path

    /// Starts `script` with `arguments` and waits for its "PORT n" line.
    public init(_ script: String, _ arguments: [String]) throws {
        server = try PythonTestServer(script, arguments)
        let line = server.firstLine
        guard line.hasPrefix("PORT "), let port = Int(line.dropFirst(5)) else {
            server.stop()
            throw LoopbackCameraServerError(message: "\(script) did not start: \(line)")
        }
        self.port = port
    }

    public static func rtsp(
        codec: String = "h264", port: Int = 0, gop: Int = 5, bframes: Int = 0, user: String? = nil, password: String? = nil,
        digest: Bool = false, sessionTimeoutSeconds: Int = 0, audio: Bool = false, size: String = "160x120", fps: Double = 15,
        maxSessions: Int = 0
    ) throws -> LoopbackCameraServer {
        var arguments = ["--codec", codec, "--port", "\(port)", "--size", size, "--fps", "\(fps)", "--gop", "\(gop)", "--bframes", "\(bframes)"]
        if let user, let password { arguments += ["--user", user, "--password", password] + (digest ? ["--digest"] : []) }
        if sessionTimeoutSeconds > 0 { arguments += ["--session-timeout", "\(sessionTimeoutSeconds)"] }
        if audio { arguments.append("--audio") }
        if maxSessions > 0 { arguments += ["--max-sessions", "\(maxSessions)"] }
        return try LoopbackCameraServer("rtsp-server.py", arguments)
    }

    /// `log`: a file the server appends "INDEX UNIX-SECONDS" to as it sends each frame.
    public static func mjpeg(jpegs: [String], cutAfter: Int = 0, fps: Double = 15, log: String? = nil) throws -> LoopbackCameraServer {
        try LoopbackCameraServer("mjpeg-server.py", jpegs + ["--fps", "\(fps)", "--cut-after", "\(cutAfter)"] + (log.map { ["--log", $0] } ?? []))
    }

    public func url(user: String? = nil, password: String? = nil) -> String {
        let credentials = user.map { "\($0):\(password ?? "")@" } ?? ""
        return "rtsp://\(credentials)127.0.0.1:\(port)/cam"
    }
    public var mjpegURL: String { "http://127.0.0.1:\(port)/video.mjpg" }

    public func signal(_ number: Int32) { server.signal(number) }

    public func stop() { server.stop() }

    /// A loopback port nobody listens on (bound, then released).
    public static func freePort() -> Int {
        let (fd, port) = boundLoopbackSocket(listening: false)
        close(fd)
        return port
    }

    /// A TCP socket bound to a free loopback port (and listening when asked), and that port.
    static func boundLoopbackSocket(listening: Bool) -> (fd: Int32, port: Int) {
        let fd = socket(AF_INET, Int32(SOCK_STREAM.rawValue), 0)
        var address = sockaddr_in()
        address.sin_family = sa_family_t(AF_INET)
        address.sin_addr.s_addr = inet_addr("127.0.0.1")
        var length = socklen_t(MemoryLayout<sockaddr_in>.size)
        _ = withUnsafeMutablePointer(to: &address) { p in
            p.withMemoryRebound(to: sockaddr.self, capacity: 1) {
                bind(fd, $0, length) == 0 && (!listening || listen(fd, 8) == 0) ? getsockname(fd, $0, &length) : -1
            }
        }
        return (fd, Int(UInt16(bigEndian: address.sin_port)))
    }
}

public struct LoopbackCameraServerError: Error, CustomStringConvertible {
    public let message: String
    public var description: String { message }
}

/// The stream tag ffprobe reads in a recording (`hvc1`, `avc1`, …).
public enum SegmentProbe {
    public static func codecTag(_ path: String) -> String {
        let r = RecordingInspector.run("/usr/bin/env", [
            "ffprobe", "-v", "error", "-select_streams", "v:0", "-show_entries", "stream=codec_tag_string", "-of", "csv=p=0", path])
        return r.output.trimmingCharacters(in: .whitespacesAndNewlines)
    }

    /// "WIDTHxHEIGHT" of the first video stream (or picture).
    public static func dimensions(_ path: String) -> String {
        let r = RecordingInspector.run("/usr/bin/env", [
            "ffprobe", "-v", "error", "-select_streams", "v:0", "-show_entries", "stream=width,height", "-of", "csv=p=0:s=x", path])
        return r.output.trimmingCharacters(in: .whitespacesAndNewlines)
    }
}
