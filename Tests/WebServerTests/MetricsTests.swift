import Capture
import CaptureTesting
import Foundation
import Hummingbird
import Media
import HummingbirdTesting
import Recorder
import Testing
@testable import WebServer

@Suite(.timeLimit(.minutes(2))) struct MetricsTests {
    /// The value of one sample line (`NAME{LABELS} VALUE`) of a Prometheus text page.
    private func value(_ page: String, _ sample: String) -> Double? {
        page.split(separator: "\n").first { $0.hasPrefix(sample + " ") }.flatMap { Double($0.split(separator: " ").last ?? "") }
    }

    @Test func metricsCountSegmentsFramesRequestsAndReadTheGauges() async throws {
        let recording = try await Recording.start(segments: 0)
        defer { recording.remove() }
        let server = recording.server(metrics: metricsRegistry)
        try await recording.stopping { try await scrapeAfterTwoSegments(recording, server) }
        var places = [server.liveClients.take(), server.liveClients.take()]
        places.removeLast()
        #expect(server.liveClients.count == 1)
        #expect(value(metricsRegistry.emitToString(), "vigil_live_clients") == 1)
        places.removeAll()
        #expect(server.liveClients.count == 0)
    }

    private func scrapeAfterTwoSegments(_ recording: Recording, _ server: WebServer) async throws {
        await recording.waitForSegments(2)
        try await server.application().test(.router) { client in
            try await client.execute(uri: "/api/v1/cameras", method: .get) { #expect($0.status == .ok) }
            try await client.execute(uri: "/api/v1/nothing", method: .get) { #expect($0.status == .notFound) }
            try await client.execute(uri: "/api/v1/cameras/\(Recording.camera)/recordings", method: .get) { #expect($0.status == .ok) }
            var page = ""
            // The counters take the events from a stream: scrape until both segments are counted.
            let counted = try await waitUntil(seconds: 30) {
                page = try await client.execute(uri: "/metrics", method: .get) { response in
                    #expect(response.status == .ok)
                    #expect(response.headers[.contentType]?.hasPrefix("text/plain; version=0.0.4") == true)
                    return String(buffer: response.body)
                }
                return (value(page, #"vigil_segments_total{camera="synthetic-0"}"#) ?? 0) >= 2
            }
            try #require(counted, "the two segments were never counted: \(page)")
            let camera = #"{camera="synthetic-0"}"#
            #expect((value(page, "vigil_segment_bytes_total" + camera) ?? 0) > 1000, "\(page)")
            let encoded = try #require(value(page, "vigil_frames_encoded_total" + camera))
            #expect(encoded >= 15, "two segments of about a second at 15 fps")
            // Every frame in a segment was captured first (and the open segment's frames too).
            #expect((value(page, "vigil_frames_captured_total" + camera) ?? 0) > encoded)
            #expect(value(page, "vigil_camera_up" + camera) == 1)
            let age = try #require(value(page, "vigil_last_frame_age_seconds" + camera))
            #expect(age >= 0 && age < 10)
            #expect((value(page, "vigil_storage_free_bytes") ?? 0) > 0)
            #expect((value(page, #"vigil_http_requests_total{code="200"}"#) ?? 0) >= 1)
            #expect((value(page, #"vigil_http_requests_total{code="404"}"#) ?? 0) >= 1)
            // Durations per route pattern (not per path: an id or camera name makes no new series).
            #expect(page.contains(#"http_server_request_duration_bucket{http_route="/api/v1/cameras""#), "\(page.prefix(3000))")
            #expect(page.contains(#"http_route="/api/v1/cameras/{name}/recordings""#), "the route's pattern")
            #expect(!page.contains("http_route=\"/api/v1/cameras/\(Recording.camera)/"), "paths are not labels")
            #expect(page.contains("# TYPE vigil_segments_total counter"))
        }
    }

    /// Lost cameras are counted by the kind of loss their event carries: a network stall is
    /// "stalled" like a wedged USB camera, whatever the words of its reason.
    @Test func lostCamerasAreCountedByTheirCause() async throws {
        let recording = try await Recording.start(segments: 0)
        defer { recording.remove() }
        await recording.stop()
        let metrics = RecorderMetrics(registry: metricsRegistry, recorder: recording.opened())
        let stall = NetworkFailure.stalled(seconds: 10)
        metrics.count(.cameraLost(camera: "lost-camera", cause: stall.lossCause, reason: "rtsp://cam/: \(stall)"))
        metrics.count(.cameraLost(camera: "lost-camera", cause: .unplugged, reason: "/dev/video0 was unplugged"))
        metrics.count(.cameraLost(camera: "lost-camera", cause: NetworkFailure.refused.lossCause, reason: "connection refused"))
        let page = metricsRegistry.emitToString()
        for cause in ["stalled", "unplugged", "unreachable"] {
            #expect(page.contains(#"vigil_camera_reconnects_total{camera="lost-camera",reason="\#(cause)"} 1"#), "\(page)")
        }
        #expect(!page.contains(#"reason="interrupted""#))
    }

    @Test func everyNetworkFailureHasItsKindOfLoss() {
        let kinds: [(NetworkFailure, LossCause)] = [
            (.refused, .unreachable), (.timeout, .unreachable), (.unreachable, .unreachable), (.unauthorized(credentialsGiven: true), .denied),
            (.forbidden, .denied), (.notFound, .denied), (.ended, .disconnected), (.stalled(seconds: 3), .stalled),
            (.badStream("a 9 MB header"), .badStream), (.other("EIO"), .failed),
        ]
        for (failure, cause) in kinds { #expect(failure.lossCause == cause, "\(failure)") }
    }
}
