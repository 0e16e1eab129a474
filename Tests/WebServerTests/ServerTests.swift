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
