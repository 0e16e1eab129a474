import Capture
import CaptureTesting
import Foundation
import Hummingbird
import HummingbirdTesting
import Recorder
import Testing
@testable import WebServer

@Suite(.timeLimit(.minutes(2))) struct ServerTests {
    @Test func camerasListsTheRecordingCameraWithItsFormatAndOpenSegment() async throws {
        let recording = try await Recording.start(segments: 0)
        defer { recording.remove() }
        try await recording.stopping { try await recording.server().application().test(.router) { client in
            try await client.execute(uri: "/healthz", method: .get) { response in
                #expect(response.status == .ok)
                #expect(response.json()["status"] as? String == "ok")
            }
            try await client.execute(uri: "/api/v1/cameras", method: .get) { response in
                #expect(response.status == .ok)
                #expect(response.headers[.contentType]?.hasPrefix("application/json") == true)
                let cameras = try #require(response.json()["cameras"] as? [[String: Any]])
                let camera = try #require(cameras.first)
                #expect(cameras.count == 1)
                #expect(camera["name"] as? String == Recording.camera)
                #expect(camera["state"] as? String == "recording")
                #expect(camera["kind"] as? String == "synthetic")
                #expect(camera["codec"] as? String == "h264")
                #expect(camera["width"] as? Int == 160 && camera["height"] as? Int == 120)
                // Measured from the frames' arrival (a smoothed interval): about the synthetic
                // camera's 15 fps, lower while a loaded machine paints late and higher while it
                // catches up, so only a rate in frames per second is asked (not 0, not per ns).
                let fps = try #require(camera["fps"] as? Double)
                #expect(fps > 1 && fps < 60, "\(fps) fps")
                #expect((camera["frames"] as? Int ?? 0) > 0)
                #expect(camera["dropped"] as? Int == 0)
                let age = try #require(camera["last_frame_age_seconds"] as? Double)
                #expect(age >= 0 && age < 10)
                let segment = try #require(camera["current_segment"] as? [String: Any])
                let start = try #require(segment["start"] as? String)
                #expect(TimeArgument.parse(start, end: false) != nil, "\(start) is not RFC 3339")
                #expect(camera["snapshot"] as? String == "/api/v1/cameras/synthetic-0/snapshot.jpg")
                #expect(camera["live_mjpeg"] as? String == "/api/v1/cameras/synthetic-0/live.mjpeg")
                #expect(camera["live_mp4"] as? String == "/api/v1/cameras/synthetic-0/live")
            }
        } }
        let after = try #require(await recording.supervisor.status().first)
        #expect(after.state == .stopped)
    }

    /// A network camera nobody answers at: the API says it is reconnecting, why (the refused
    /// connection), since when, and when it is tried next.
    @Test func aCameraThatRefusesIsReconnectingWithTheReasonAndTheNextAttempt() async throws {
        let dir = try TemporaryDirectory("vigil-web-refused")
        defer { dir.remove() }
        let url = "rtsp://127.0.0.1:\(LoopbackCameraServer.freePort())/cam"
        let events = RecorderEvents()
        let keeper = try StorageKeeper.open(root: dir.path, policy: RetentionPolicy(), events: events)
        keeper.start()
        let movie = try SegmentedMovieOutput(.init(storageRoot: dir.path, segmentSeconds: 1, encoding: .streamCopy))
        let supervisor = Supervisor(
            plans: [CameraPlan(cameraID: "door", matches: { $0.id == NetworkCamera.deviceID(for: url) }, format: .preset(.high), frameRate: 15,
                               outputs: [(movie, .init())])],
            source: NetworkDeviceSource(cameras: [(url, NetworkCamera.Settings())]), events: events)
        let run = Task.detached { await supervisor.run() }
        let reconnecting = await waitUntil(seconds: 30) { await supervisor.status().first?.state == .reconnecting }
        #expect(reconnecting)
        var configuration = Configuration.builtInDefault(storageRoot: dir.path)
        configuration.http = HTTPSettings()
        let server = WebServer(settings: configuration.http, recorder: RecorderService.Opened(
            configuration: configuration, root: dir.path, supervisor: supervisor, index: keeper.index, events: events, liveFeeds: LiveFeeds()))
        try await server.application().test(.router) { client in
            try await client.execute(uri: "/api/v1/cameras", method: .get) { response in
                let camera = try #require((response.json()["cameras"] as? [[String: Any]])?.first)
                #expect(camera["state"] as? String == "reconnecting")
                let reason = try #require(camera["reason"] as? String)
                #expect(reason.contains("refused"), "\(reason)")
                let since = try #require((camera["since"] as? String).flatMap { TimeArgument.parse($0, end: false) })
                let next = try #require((camera["next_attempt"] as? String).flatMap { TimeArgument.parse($0, end: false) })
                #expect(next >= since, "tried next after it was lost")
            }
        }
        run.cancel()
        await run.value
        await keeper.stop()
    }

    /// `since` and `next_attempt` are the monotonic instants as times of day: a retry to come is
    /// a time to come, not the time of the answer.
    @Test func monotonicInstantsBecomeTimesOfDayPastAndToCome() {
        let now: Int64 = 1_000_000_000_000, wall: Int64 = 1_800_000_000_000_000_000
        #expect(ApiRoutes.wallNanos(ofMonotonic: now + 5_000_000_000, now: now, wallNow: wall) == wall + 5_000_000_000)
        #expect(ApiRoutes.wallNanos(ofMonotonic: now - 7_000_000_000, now: now, wallNow: wall) == wall - 7_000_000_000)
    }

    @Test func unknownRoutesAnswer404JSON() async throws {
        let recording = try await Recording.start(segments: 0)
        defer { recording.remove() }
        try await recording.stopping { try await recording.server().application().test(.router) { client in
            try await client.execute(uri: "/api/v1/nothing-here", method: .get) { response in
                #expect(response.status == .notFound)
                #expect(response.headers[.contentType]?.hasPrefix("application/json") == true)
                #expect(response.errorMessage?.isEmpty == false)
            }
        } }
    }

    /// HEAD asks what a GET would get (monitors, link checkers); it used to be 404 for the page.
    @Test func headOfThePageAnswersLikeGetWithoutABody() async throws {
        let recording = try await Recording.start(segments: 0)
        defer { recording.remove() }
        try await recording.stopping { try await recording.server().application().test(.router) { client in
            let get = try await client.execute(uri: "/", method: .get) { ($0.status, $0.body.readableBytes) }
            try await client.execute(uri: "/", method: .head) { response in
                #expect(response.status == get.0 && response.status != .notFound)
                #expect(response.body.readableBytes == 0)
                #expect(response.headers[.contentLength] == String(get.1))
            }
        } }
    }
}
