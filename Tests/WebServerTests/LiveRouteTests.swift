import CaptureTesting
import Foundation
import Hummingbird
import HummingbirdTesting
import HummingbirdWSClient
import HummingbirdWSTesting
import Recorder
import Synchronization
import Testing
@testable import WebServer

/// The live endpoints over a real socket, read by real clients (curl, a WebSocket client).
@Suite(.timeLimit(.minutes(2))) struct LiveRouteTests {
    /// Runs curl off Swift's cooperative pool; the body goes to `output`. Returns curl's exit
    /// status and what `--write-out` printed.
    private func curl(_ arguments: [String], output: String) async throws -> (status: Int32, written: String) {
        let process = Process()
        process.executableURL = URL(fileURLWithPath: "/usr/bin/curl")
        process.arguments = ["-s", "-o", output] + arguments
        let out = Pipe()
        process.standardOutput = out
        return try await withCheckedThrowingContinuation { c in
            process.terminationHandler = { p in
                let written = String(decoding: out.fileHandleForReading.readDataToEndOfFile(), as: UTF8.self)
                c.resume(returning: (p.terminationStatus, written))
            }
            do { try process.run() } catch { c.resume(throwing: error) }
        }
    }

    /// The JPEG parts of a multipart/x-mixed-replace body (the last one may be cut off).
    private func jpegParts(_ body: Data) -> [Data] {
        var parts: [Data] = []
        var rest = body[...]
        let boundary = Data("--frame\r\n".utf8), blank = Data("\r\n\r\n".utf8)
        while let b = rest.range(of: boundary), let h = rest.range(of: blank, in: b.upperBound..<rest.endIndex) {
            let header = String(decoding: rest[b.upperBound..<h.lowerBound], as: UTF8.self)
            guard let line = header.split(separator: "\r\n").first(where: { $0.lowercased().hasPrefix("content-length:") }),
                  let length = Int(line.split(separator: ":")[1].trimmingCharacters(in: .whitespaces)),
                  h.upperBound + length <= rest.endIndex
            else { break }
            parts.append(Data(rest[h.upperBound..<(h.upperBound + length)]))
            rest = rest[(h.upperBound + length)...]
        }
        return parts
    }

    private func sequence(ofJPEG data: Data, _ dir: TemporaryDirectory, _ name: String) throws -> UInt32? {
        let path = "\(dir.path)/\(name)"
        try data.write(to: URL(fileURLWithPath: path))
        #expect(RecordingInspector.ffprobeProblem(path) == nil)
        return try RecordingInspector.decode(path).sequences.first ?? nil
    }

    @Test func snapshotIsTheCurrentFrameAndUnknownCamerasAre404() async throws {
        let recording = try await Recording.start(segments: 0)
        defer { recording.remove() }
        let dir = try TemporaryDirectory()
        defer { dir.remove() }
        let (sequences, frames) = try await recording.stopping {
            let sequences = try await recording.server().application().test(.router) { client in
                var sequences: [UInt32] = []
                for i in 0..<2 {
                    if i > 0 { try await Task.sleep(for: .milliseconds(500)) }
                    try await client.execute(uri: "/api/v1/cameras/\(Recording.camera)/snapshot.jpg", method: .get) { response in
                        #expect(response.status == .ok)
                        #expect(response.headers[.contentType] == "image/jpeg")
                        sequences.append(try #require(try sequence(ofJPEG: Data(response.body.readableBytesView), dir, "s\(i).jpg")))
                    }
                }
                try await client.execute(uri: "/api/v1/cameras/nobody/snapshot.jpg", method: .get) { response in
                    #expect(response.status == .notFound)
                    #expect(response.errorMessage?.contains("nobody") == true)
                }
                return sequences
            }
            return (sequences, try #require(await recording.supervisor.status().first).frames)
        }
        // The image changes (15 fps, half a second apart) and is the camera's newest frame.
        #expect(sequences.count == 2 && sequences[1] > sequences[0])
        #expect(Int(sequences[1]) + 8 >= frames, "snapshot frame \(sequences[1]) is old: \(frames) frames were captured")
    }

    @Test func mjpegPartsDecodeAndAdvanceAndASlowViewerDropsNoCaptureFrame() async throws {
        let recording = try await Recording.start(segments: 0)
        defer { recording.remove() }
        let dir = try TemporaryDirectory()
        defer { dir.remove() }
        let server = recording.server()
        let status = try await recording.stopping {
            try await server.application().test(.live) { client in
                let url = "http://127.0.0.1:\(client.port!)/api/v1/cameras/\(Recording.camera)/live.mjpeg"
                // A viewer reading at 2 KB/s alongside one reading at full speed, for three seconds.
                async let slow = curl(["--limit-rate", "2k", "--max-time", "3", url], output: "\(dir.path)/slow.mjpeg")
                let fast = try await curl(["--max-time", "3", "-D", "\(dir.path)/headers", url], output: "\(dir.path)/fast.mjpeg")
                _ = try await slow
                // curl ends them (28: time limit reached), which is how a browser leaves too.
                #expect(fast.status == 28)
                let headers = try String(contentsOfFile: "\(dir.path)/headers", encoding: .utf8)
                #expect(headers.lowercased().contains("content-type: multipart/x-mixed-replace; boundary=frame"))
                let parts = jpegParts(try Data(contentsOf: URL(fileURLWithPath: "\(dir.path)/fast.mjpeg")))
                #expect(parts.count >= 10, "only \(parts.count) JPEGs in 3 s")
                let sequences = try parts.prefix(8).enumerated().map { try #require(try sequence(ofJPEG: $1, dir, "p\($0).jpg")) }
                for (a, b) in zip(sequences, sequences.dropFirst()) { #expect(b > a, "frames do not advance: \(sequences)") }
                // Both viewers left: their places are free again.
                #expect(await waitUntil(seconds: 5) { server.liveClients.count == 0 })
            }
            return try #require(await recording.supervisor.status().first)
        }
        #expect(status.droppedFrames == 0, "capture dropped \(status.droppedFrames) frame(s) while a viewer was slow")
    }

    @Test func webSocketSendsAnInitSegmentThenFragmentsFromAKeyframe() async throws {
        let recording = try await Recording.start(segments: 0)
        defer { recording.remove() }
        let dir = try TemporaryDirectory()
        defer { dir.remove() }
        try await recording.stopping {
            try await recording.server().application().test(.live) { client in
                let received = Mutex<(stream: Data, messages: Int)>((Data(), 0))
                let path = "/api/v1/cameras/\(Recording.camera)/live"
                // The client sends `Origin: ws://localhost`, this server's host.
                let configuration = WebSocketClientConfiguration(maxFrameSize: 1 << 24)
                try await client.ws(path, configuration: configuration) { inbound, _, _ in
                    for try await message in inbound.messages(maxSize: 1 << 24) {
                        guard case .binary(let bytes) = message else { continue }
                        let count = received.withLock { r in
                            r.stream.append(contentsOf: bytes.readableBytesView)
                            r.messages += 1
                            return r.messages
                        }
                        if count >= 20 { break }
                    }
                }
                let file = "\(dir.path)/live.mp4"
                try received.withLock { $0.stream }.write(to: URL(fileURLWithPath: file))
                #expect(RecordingInspector.ffprobeProblem(file) == nil)
                let decoded = try RecordingInspector.decode(file)
                #expect(decoded.codec == "h264" && decoded.startsWithKeyframe)
                #expect(decoded.sequences.count >= 18)
                let seqs = decoded.sequences.compactMap { $0 }
                #expect(seqs.count == decoded.sequences.count && zip(seqs, seqs.dropFirst()).allSatisfy { $1 == $0 + 1 })
            }
        }
    }

    @Test func webSocketFromAnotherOriginIsRefused() async throws {
        let recording = try await Recording.start(segments: 0)
        defer { recording.remove() }
        let dir = try TemporaryDirectory()
        defer { dir.remove() }
        try await recording.stopping {
            try await recording.server().application().test(.live) { client in
                let url = "http://127.0.0.1:\(client.port!)/api/v1/cameras/\(Recording.camera)/live"
                let upgrade = ["-H", "Connection: Upgrade", "-H", "Upgrade: websocket", "-H", "Sec-WebSocket-Version: 13",
                               "-H", "Sec-WebSocket-Key: dGhlIHNhbXBsZSBub25jZQ==", "--max-time", "3", "-w", "%{http_code}"]
                // SwiftNIO's upgrader answers a refused upgrade with 400; without upgrade headers the
                // route itself answers 403 with the JSON error.
                let evil = try await curl(upgrade + ["-H", "Origin: http://evil.example", url], output: "\(dir.path)/evil")
                #expect(evil.written == "400")
                let plain = try await curl(["-H", "Origin: http://evil.example", "-w", "%{http_code}", url], output: "\(dir.path)/plain")
                #expect(plain.written == "403")
                let body = try String(contentsOfFile: "\(dir.path)/plain", encoding: .utf8)
                #expect(body.contains("\"error\"") && body.contains("evil.example"))
                let own = try await curl(upgrade + ["-H", "Origin: http://127.0.0.1:\(client.port!)", url], output: "\(dir.path)/own")
                #expect(own.written == "101")
            }
        }
    }

    /// A viewer that keeps watching must not keep the server (and vigil) from stopping.
    @Test func theServerStopsWhileAViewerWatches() async throws {
        let recording = try await Recording.start(segments: 0)
        defer { recording.remove() }
        let dir = try TemporaryDirectory()
        defer { dir.remove() }
        let server = recording.server()
        let watcher = try await recording.stopping {
            try await server.application().test(.live) { client in
                let url = "http://127.0.0.1:\(client.port!)/api/v1/cameras/\(Recording.camera)/live.mjpeg"
                let watcher = Task { try await curl(["--max-time", "60", url], output: "\(dir.path)/watching") }
                #expect(await waitUntil(seconds: 5) { server.liveClients.count == 1 })
                return watcher
            }
        }
        // The test harness shut the server down on return: the stream ended, and curl with it
        // (28 would be its own 60 s limit: the server waited for the viewer).
        let result = try await watcher.value
        #expect(result.status != 28, "the server waited for its viewer to leave")
        #expect(server.liveClients.count == 0)
    }

    @Test func liveViewersOverTheCapAreRefusedWith503() async throws {
        let recording = try await Recording.start(segments: 0)
        defer { recording.remove() }
        let dir = try TemporaryDirectory()
        defer { dir.remove() }
        var http = HTTPSettings()
        http.maxLiveClients = 1
        let server = recording.server(http)
        try await recording.stopping {
            try await server.application().test(.live) { client in
                let url = "http://127.0.0.1:\(client.port!)/api/v1/cameras/\(Recording.camera)/live.mjpeg"
                async let first = curl(["--max-time", "4", url], output: "\(dir.path)/first")
                #expect(await waitUntil(seconds: 3) { server.liveClients.count == 1 })
                let second = try await curl(["--max-time", "3", "-w", "%{http_code}", url], output: "\(dir.path)/second")
                #expect(second.written == "503")
                let body = try String(contentsOfFile: "\(dir.path)/second", encoding: .utf8)
                #expect(body.contains("max_live_clients"))
                _ = try await first
            }
        }
    }
}

/// Polls `condition` every 50 ms until it holds or `seconds` pass.
private func waitUntil(seconds: Double, _ condition: () -> Bool) async -> Bool {
    let deadline = Date().addingTimeInterval(seconds)
    while Date() < deadline {
        if condition() { return true }
        try? await Task.sleep(for: .milliseconds(50))
    }
    return condition()
}
