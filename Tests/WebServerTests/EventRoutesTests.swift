import CaptureTesting
import Foundation
import Hummingbird
import HummingbirdTesting
import Media
@testable import Recorder
import Testing
@testable import WebServer

/// Motion events in the API: listed for the timeline (one under way has no end yet), their
/// pictures served by id from under the storage root only, and counted in /metrics.
@Suite(.timeLimit(.minutes(2))) struct EventRoutesTests {
    @Test func eventsAreListedWhileUnderWayAndAfterAndTheirPictureIsServedById() async throws {
        let recording = try await Recording.start(segments: 0)
        defer { recording.remove() }
        await recording.stop()
        let index = recording.keeper.index
        let now = Int64(Date().timeIntervalSince1970 * 1e9)
        let start = now - 5_000_000_000
        // What a motion output announces, indexed by the storage keeper as the recorder does.
        recording.keeper.start()
        recording.events.emit(.motionStarted(camera: Recording.camera, startWallNanos: start))
        await recording.keeper.flush()
        let picture = recording.dir.path + "/\(Recording.camera)/events/picture.jpg"
        try FileManager.default.createDirectory(atPath: (picture as NSString).deletingLastPathComponent, withIntermediateDirectories: true)
        let encoder = try JPEGEncoder(width: 64, height: 48, quality: 80)
        try encoder.encode(try encoder.makePicture()) { try Data($0).write(to: URL(fileURLWithPath: picture)) }

        try await recording.server().application().test(.router) { client in
            let uri = "/api/v1/cameras/\(Recording.camera)/events?from=today&to=now"
            let underWay = try await client.execute(uri: uri, method: .get) { response in
                #expect(response.status == .ok)
                #expect(response.json()["camera"] as? String == Recording.camera)
                return response.json()["events"] as? [[String: Any]] ?? []
            }
            try #require(underWay.count == 1)
            #expect(underWay[0]["end"] is NSNull && underWay[0]["thumbnail"] is NSNull, "\(underWay)")

            recording.events.emit(.motionEnded(camera: Recording.camera, .init(
                startWallNanos: start, endWallNanos: now - 1_000_000_000, peakPercent: 12.34, picturePath: picture)))
            await recording.keeper.flush()
            let ended = try await client.execute(uri: uri, method: .get) { $0.json()["events"] as? [[String: Any]] ?? [] }
            try #require(ended.count == 1)
            let id = try #require(ended[0]["id"] as? Int64)
            #expect(ended[0]["peak_area_percent"] as? Double == 12.3)
            let end = try #require(TimeArgument.parse(ended[0]["end"] as? String ?? "", end: false))
            #expect(abs(end.timeIntervalSince1970 * 1e9 - Double(now - 1_000_000_000)) < 2e6)
            let thumbnail = try #require(ended[0]["thumbnail"] as? String)
            #expect(thumbnail == "/api/v1/events/\(id)/thumbnail.jpg")
            try await client.execute(uri: thumbnail, method: .get) { response in
                #expect(response.status == .ok)
                #expect(response.headers[.contentType] == "image/jpeg")
                let saved = recording.dir.path + "/downloaded.jpg"
                try Data(response.body.readableBytesView).write(to: URL(fileURLWithPath: saved))
                #expect(RecordingInspector.ffprobeProblem(saved) == nil)
            }
            // Outside the range: nothing.
            try await client.execute(uri: "/api/v1/cameras/\(Recording.camera)/events?from=2020-01-01&to=2020-01-02", method: .get) { response in
                #expect((response.json()["events"] as? [Any])?.isEmpty == true)
            }
            try await client.execute(uri: "/api/v1/events/\(id + 100)/thumbnail.jpg", method: .get) { #expect($0.status == .notFound) }
            try await client.execute(uri: "/api/v1/cameras/nobody/events", method: .get) { #expect($0.status == .notFound) }
            // A row that points outside the storage root serves nothing.
            try index.endMotionEvent(camera: Recording.camera, startNanos: start + 1, endNanos: start + 2, peakPercent: 1, picture: "../../etc/passwd")
            let outside = try #require(try index.motionEvents(camera: Recording.camera).last?.id)
            try await client.execute(uri: "/api/v1/events/\(outside)/thumbnail.jpg", method: .get) { response in
                #expect(response.status == .notFound)
                #expect(!String(buffer: response.body).contains("root:"))
            }
        }
        await recording.keeper.stop()
    }

    @Test func motionEventsAreCounted() async throws {
        let recording = try await Recording.start(segments: 0)
        defer { recording.remove() }
        await recording.stop()
        let metrics = RecorderMetrics(registry: metricsRegistry, recorder: recording.opened())
        metrics.count(.motionStarted(camera: "counted-camera", startWallNanos: 0))
        metrics.count(.motionStarted(camera: "counted-camera", startWallNanos: 1))
        #expect(metricsRegistry.emitToString().contains(#"vigil_motion_events_total{camera="counted-camera"} 2"#))
    }
}
