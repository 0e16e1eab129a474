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
        // The JPEGs are decoded (ffprobe, ffmpeg) only once the frames are counted: on a busy
        // machine those programs take long enough for many more frames to come.
        let (jpegs, frames) = try await recording.stopping {
            let jpegs = try await recording.server().application().test(.router) { client in
                var jpegs: [Data] = []
                for i in 0..<2 {
                    if i > 0 { try await Task.sleep(for: .milliseconds(500)) }
                    try await client.execute(uri: "/api/v1/cameras/\(Recording.camera)/snapshot.jpg", method: .get) { response in
                        #expect(response.status == .ok)
                        #expect(response.headers[.contentType] == "image/jpeg")
                        jpegs.append(Data(response.body.readableBytesView))
                    }
                }
                try await client.execute(uri: "/api/v1/cameras/nobody/snapshot.jpg", method: .get) { response in
                    #expect(response.status == .notFound)
                    #expect(response.errorMessage?.contains("nobody") == true)
                }
                return jpegs
            }
            return (jpegs, try #require(await recording.supervisor.status().first).frames)
        }
        let sequences = try jpegs.enumerated().map { try #require(try sequence(ofJPEG: $1, dir, "s\($0).jpg")) }
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
                // A viewer reading at 2 KB/s alongside one reading at full speed, for eight seconds:
                // long enough for ten parts on a loaded machine (the stream sends up to 10 a second).
                async let slow = curl(["--limit-rate", "2k", "--max-time", "8", url], output: "\(dir.path)/slow.mjpeg")
                let fast = try await curl(["--max-time", "8", "-D", "\(dir.path)/headers", url], output: "\(dir.path)/fast.mjpeg")
                _ = try await slow
                // curl ends them (28: time limit reached), which is how a browser leaves too.
                #expect(fast.status == 28)
                let headers = try String(contentsOfFile: "\(dir.path)/headers", encoding: .utf8)
                #expect(headers.lowercased().contains("content-type: multipart/x-mixed-replace; boundary=frame"))
                let parts = jpegParts(try Data(contentsOf: URL(fileURLWithPath: "\(dir.path)/fast.mjpeg")))
                #expect(parts.count >= 10, "only \(parts.count) JPEGs in 8 s")
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

    /// A page leaving says "close": the server ends the stream and closes first, so no
    /// fragment crosses the browser's own close (Chromium logs "Data frame received after
    /// close"). Before, the server waited for the client's close and the stream went on.
    @Test(.timeLimit(.minutes(1))) func aViewerThatSaysCloseIsClosedByTheServer() async throws {
        let recording = try await Recording.start(segments: 0)
        defer { recording.remove() }
        try await recording.stopping {
            try await recording.server().application().test(.live) { client in
                let after = Mutex<(binary: Int, ended: Bool)>((0, false))
                try await client.ws("/api/v1/cameras/\(Recording.camera)/live", configuration: WebSocketClientConfiguration(maxFrameSize: 1 << 24)) { inbound, outbound, _ in
                    var messages = 0, said = false
                    for try await message in inbound.messages(maxSize: 1 << 24) {
                        guard case .binary = message else { continue }
                        messages += 1
                        if said { after.withLock { $0.binary += 1 } }
                        if messages == 3 && !said {
                            try await outbound.write(.text("close"))
                            said = true
                        }
                    }
                    // The loop ends only when the server closes: the client never does here.
                    after.withLock { $0.ended = true }
                }
                let seen = after.withLock { $0 }
                #expect(seen.ended)
                // What was in flight when the message was sent, not a stream that went on.
                #expect(seen.binary <= 3, "\(seen.binary) fragments after the close was asked for")
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
                               "-H", "Sec-WebSocket-Key: dGhlIHNhbXBsZSBub25jZQ==", "--max-time", "3"]
                // A refused upgrade is answered like any request (SwiftNIO's upgrader alone would
                // say a bare 400), and so is the same request without upgrade headers.
                let evil = try await curl(upgrade + ["-w", "%{http_code}", "-H", "Origin: http://evil.example", url], output: "\(dir.path)/evil")
                #expect(evil.written == "403")
                let refusal = try String(contentsOfFile: "\(dir.path)/evil", encoding: .utf8)
                #expect(refusal.contains("\"error\"") && refusal.contains("evil.example"), "\(refusal)")
                let plain = try await curl(["-H", "Origin: http://evil.example", "-w", "%{http_code}", url], output: "\(dir.path)/plain")
                #expect(plain.written == "403")
                let body = try String(contentsOfFile: "\(dir.path)/plain", encoding: .utf8)
                #expect(body.contains("\"error\"") && body.contains("evil.example"))
                let own = try await curl(upgrade + ["-w", "%{http_code}", "-H", "Origin: http://127.0.0.1:\(client.port!)", url], output: "\(dir.path)/own")
                #expect(own.written == "101")
                // Under DNS rebinding the page's origin is the attacker's name, whatever the address.
                let rebound = try await curl(upgrade + ["-w", "%{http_code}", "-H", "Origin: http://evil.example:\(client.port!)", "-H", "Host: evil.example:\(client.port!)", url], output: "\(dir.path)/rebound")
                #expect(rebound.written == "421" || rebound.written == "403", "\(rebound.written)")
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
                #expect(await waitUntil(seconds: 30) { server.liveClients.count == 1 })
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
        // The first viewer stays until the server stops (its own limit is far off), so it holds
        // the one place however long a busy machine takes to start the second.
        let first = try await recording.stopping {
            try await server.application().test(.live) { client in
                let url = "http://127.0.0.1:\(client.port!)/api/v1/cameras/\(Recording.camera)/live.mjpeg"
                let first = Task { try await curl(["--max-time", "60", url], output: "\(dir.path)/first") }
                #expect(await waitUntil(seconds: 30) { server.liveClients.count == 1 })
                let second = try await curl(["--max-time", "30", "-w", "%{http_code}", url], output: "\(dir.path)/second")
                #expect(second.written == "503")
                let body = try String(contentsOfFile: "\(dir.path)/second", encoding: .utf8)
                #expect(body.contains("max_live_clients"))
                return first
            }
        }
        _ = try await first.value
    }

    /// A GET of the WebSocket's path without an upgrade is no viewer: it is told 426 and takes no
    /// place. Such requests used to take a place for good (16 of them and every viewer got 503).
    @Test func aPlainGetOfTheWebSocketTakesNoPlace() async throws {
        let recording = try await Recording.start(segments: 0)
        defer { recording.remove() }
        let dir = try TemporaryDirectory()
        defer { dir.remove() }
        var http = HTTPSettings()
        http.maxLiveClients = 2
        let server = recording.server(http)
        try await recording.stopping {
            try await server.application().test(.live) { client in
                let base = "http://127.0.0.1:\(client.port!)/api/v1/cameras/\(Recording.camera)"
                for i in 0..<6 {
                    let plain = try await curl(["-w", "%{http_code}", "--max-time", "5", base + "/live"], output: "\(dir.path)/plain\(i)")
                    #expect(plain.written == "426", "\(i): \(plain.written)")
                }
                #expect(try String(contentsOfFile: "\(dir.path)/plain0", encoding: .utf8).contains("is a WebSocket"))
                #expect(server.liveClients.count == 0)
                let viewer = try await curl(["-w", "%{http_code}", "--max-time", "2", base + "/live.mjpeg"], output: "\(dir.path)/viewer")
                #expect(viewer.written == "200", "a viewer after the plain GETs: \(viewer.written)")
                #expect(await waitUntil(seconds: 5) { server.liveClients.count == 0 })
            }
        }
    }

    /// A viewer that stops reading is disconnected after idle_timeout_seconds once its socket is
    /// full (kept small for live viewers, so that takes seconds), and its place is given back.
    /// It used to stay connected for good with megabytes queued.
    @Test func aViewerThatTakesNothingIsDisconnected() async throws {
        let recording = try await Recording.start(segments: 0)
        defer { recording.remove() }
        var http = HTTPSettings()
        http.idleTimeoutSeconds = 2
        let server = recording.server(http)
        try await recording.stopping {
            try await server.application().test(.live) { client in
                let stuck = try RawConnection(port: client.port!, receiveBuffer: 4096)
                defer { stuck.close() }
                await stuck.send("GET /api/v1/cameras/\(Recording.camera)/live.mjpeg HTTP/1.1\r\nHost: 127.0.0.1\r\n\r\n")
                #expect(await waitUntil(seconds: 5) { server.liveClients.count == 1 })
                #expect(await waitUntil(seconds: 60) { server.liveClients.count == 0 }, "a viewer that reads nothing still holds its place")
            }
        }
    }
}
