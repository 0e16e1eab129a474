import Capture
import CaptureTesting
import Foundation
import Hummingbird
import HummingbirdTesting
import Recorder
import Testing
@testable import WebServer

/// Recordings and stills by id: listings, the files themselves (decoded), ranges, caching, and
/// nothing outside the storage root.
@Suite(.timeLimit(.minutes(2))) struct FileTests {
    /// Two finished segments and the stills taken meanwhile, camera stopped.
    private func recorded() async throws -> Recording {
        let recording = try await Recording.start(segments: 2)
        await recording.stop()
        return recording
    }

    private func save(_ response: TestResponse, in recording: Recording, as name: String) throws -> String {
        let path = recording.dir.path + "/" + name
        try Data(response.body.readableBytesView).write(to: URL(fileURLWithPath: path))
        return path
    }

    @Test func recordingsListSegmentsByIdAndEachFileDecodes() async throws {
        let recording = try await recorded()
        defer { recording.remove() }
        let segments = try recording.keeper.index.entries(camera: Recording.camera, kind: .segment, states: [.complete])
        try #require(segments.count >= 2)
        try await recording.server().application().test(.router) { client in
            let listed = try await client.execute(uri: "/api/v1/cameras/synthetic-0/recordings?from=today&to=now", method: .get) { response in
                #expect(response.status == .ok)
                let json = response.json()
                #expect(json["camera"] as? String == "synthetic-0")
                #expect(json["gaps"] as? [Any] != nil)
                return json["recordings"] as? [[String: Any]] ?? []
            }
            #expect(listed.map { $0["id"] as? Int64 } == segments.map(\.id))
            for (item, segment) in zip(listed, segments) {
                #expect(item["url"] as? String == "/api/v1/recordings/\(segment.id)/file")
                #expect(item["container"] as? String == "mp4")
                #expect(item["bytes"] as? Int64 == segment.bytes)
                let start = try #require(TimeArgument.parse(item["start"] as? String ?? "", end: false))
                #expect(abs(start.timeIntervalSince1970 * 1e9 - Double(segment.startNanos)) < 2e6, "start to the millisecond")
                #expect(!(item["url"] as? String ?? "").contains(segment.path), "no path in a URL")
            }
            let first = segments[0]
            try await client.execute(uri: "/api/v1/recordings/\(first.id)/file", method: .get) { response in
                #expect(response.status == .ok)
                #expect(response.headers[.contentType] == "video/mp4")
                #expect(response.headers[.acceptRanges] == "bytes")
                #expect(response.headers[.eTag] != nil && response.headers[.lastModified]?.hasSuffix(" GMT") == true)
                let onDisk = try Data(contentsOf: URL(fileURLWithPath: recording.dir.path + "/" + first.path))
                #expect(Data(response.body.readableBytesView) == onDisk)
                let saved = try save(response, in: recording, as: "downloaded.mp4")
                #expect(RecordingInspector.ffprobeProblem(saved) == nil)
                #expect(try RecordingInspector.decode(saved).sequences.count == first.frames)
            }
            // A range outside today lists nothing (and is no error).
            try await client.execute(uri: "/api/v1/cameras/synthetic-0/recordings?from=2020-01-01&to=2020-01-02", method: .get) { response in
                #expect(response.status == .ok)
                #expect((response.json()["recordings"] as? [Any])?.isEmpty == true)
            }
        }
    }

    @Test func rangesETagAnd304() async throws {
        let recording = try await recorded()
        defer { recording.remove() }
        let segment = try #require(try recording.keeper.index.entries(kind: .segment, states: [.complete]).first)
        let bytes = try Data(contentsOf: URL(fileURLWithPath: recording.dir.path + "/" + segment.path))
        let uri = "/api/v1/recordings/\(segment.id)/file"
        try await recording.server().application().test(.router) { client in
            let etag = try await client.execute(uri: uri, method: .get) { try #require($0.headers[.eTag]) }
            try await client.execute(uri: uri, method: .get, headers: [.range: "bytes=0-99"]) { response in
                #expect(response.status == .partialContent)
                #expect(response.headers[.contentRange] == "bytes 0-99/\(bytes.count)")
                #expect(Data(response.body.readableBytesView) == bytes.prefix(100))
            }
            try await client.execute(uri: uri, method: .get, headers: [.range: "bytes=100-"]) { response in
                #expect(response.status == .partialContent)
                #expect(Data(response.body.readableBytesView) == bytes.dropFirst(100))
            }
            try await client.execute(uri: uri, method: .get, headers: [.range: "bytes=-10"]) { response in
                #expect(response.status == .partialContent)
                #expect(response.headers[.contentRange] == "bytes \(bytes.count - 10)-\(bytes.count - 1)/\(bytes.count)")
                #expect(Data(response.body.readableBytesView) == bytes.suffix(10))
            }
            try await client.execute(uri: uri, method: .get, headers: [.range: "bytes=\(bytes.count)-"]) { response in
                #expect(response.status == .rangeNotSatisfiable)
                #expect(response.headers[.contentRange] == "bytes */\(bytes.count)")
            }
            try await client.execute(uri: uri, method: .get, headers: [.ifNoneMatch: etag]) { response in
                #expect(response.status == .notModified)
                #expect(response.body.readableBytes == 0)
                #expect(response.headers[.eTag] == etag)
            }
            try await client.execute(uri: uri, method: .head) { response in
                #expect(response.status == .ok)
                #expect(response.headers[.contentLength] == String(bytes.count))
                #expect(response.headers[.eTag] == etag)
                #expect(response.body.readableBytes == 0)
            }
            try await client.execute(uri: uri, method: .get, headers: [.ifNoneMatch: "\"other\""]) { response in
                #expect(response.status == .ok)
                #expect(response.body.readableBytes == bytes.count)
            }
        }
    }

    @Test func stillsAreListedByIdAndServedAsJPEG() async throws {
        let recording = try await recorded()
        defer { recording.remove() }
        let stills = try recording.keeper.index.entries(camera: Recording.camera, kind: .still, states: [.complete])
        try #require(!stills.isEmpty)
        try await recording.server().application().test(.router) { client in
            let listed = try await client.execute(uri: "/api/v1/cameras/synthetic-0/stills", method: .get) { response in
                #expect(response.status == .ok)
                #expect(response.json()["camera"] as? String == "synthetic-0")
                return response.json()["stills"] as? [[String: Any]] ?? []
            }
            #expect(listed.map { $0["id"] as? Int64 } == stills.map(\.id))
            let url = try #require(listed.first?["url"] as? String)
            #expect(url == "/api/v1/stills/\(stills[0].id)")
            try await client.execute(uri: url, method: .get) { response in
                #expect(response.status == .ok)
                #expect(response.headers[.contentType] == "image/jpeg")
                let saved = try save(response, in: recording, as: "still.jpg")
                #expect(RecordingInspector.ffprobeProblem(saved) == nil)
            }
            // A still's id is not a recording's, and the other way round.
            try await client.execute(uri: "/api/v1/recordings/\(stills[0].id)/file", method: .get) { response in
                #expect(response.status == .notFound)
            }
        }
    }

    @Test func unknownCamerasIdsAndBadTimesAreJSONErrors() async throws {
        let recording = try await recorded()
        defer { recording.remove() }
        try await recording.server().application().test(.router) { client in
            for uri in ["/api/v1/cameras/nobody/recordings", "/api/v1/cameras/nobody/stills", "/api/v1/recordings/999999/file",
                        "/api/v1/recordings/abc/file", "/api/v1/stills/999999", "/api/v1/recordings/-1/file"] {
                try await client.execute(uri: uri, method: .get) { response in
                    #expect(response.status == .notFound, "\(uri)")
                    #expect(response.errorMessage != nil, "\(uri)")
                }
            }
            try await client.execute(uri: "/api/v1/cameras/synthetic-0/recordings?from=yesterday-ish", method: .get) { response in
                #expect(response.status == .badRequest)
                #expect(response.errorMessage?.contains("from=yesterday-ish") == true)
            }
            try await client.execute(uri: "/api/v1/cameras/synthetic-0/stills?from=now&to=yesterday", method: .get) { response in
                #expect(response.status == .badRequest)
                #expect(response.errorMessage == "from must come before to")
            }
        }
    }

    @Test func aRowOrALinkPointingOutsideTheRootIsRefused() async throws {
        let recording = try await recorded()
        defer { recording.remove() }
        let outside = try TemporaryDirectory("vigil-outside")
        defer { outside.remove() }
        let secret = outside.path + "/secret.mp4"
        try Data("not for the web".utf8).write(to: URL(fileURLWithPath: secret))
        // A crafted row that climbs out of the root, and a link inside the root that points out.
        // Both are under /tmp: ROOT/../vigil-outside-…/secret.mp4.
        let climbing = "../" + URL(fileURLWithPath: outside.path).lastPathComponent + "/secret.mp4"
        try FileManager.default.createSymbolicLink(atPath: recording.dir.path + "/synthetic-0/link.mp4", withDestinationPath: secret)
        var ids: [Int64] = []
        for path in [climbing, "synthetic-0/link.mp4", secret] {
            try recording.keeper.index.put(RecordingIndex.Entry(
                kind: .segment, camera: Recording.camera, path: path, startNanos: 1, endNanos: 2, frames: 1, bytes: 15,
                codec: "h264", width: 160, height: 120, state: .complete))
            ids.append(try #require(try recording.keeper.index.entries(kind: .segment).first { $0.path == path }).id)
        }
        try #require(FileManager.default.contents(atPath: recording.dir.path + "/" + climbing) != nil, "the crafted row really reaches the file")
        try await recording.server().application().test(.router) { [ids] client in
            for id in ids {
                try await client.execute(uri: "/api/v1/recordings/\(id)/file", method: .get) { response in
                    #expect(response.status == .notFound)
                    #expect(!String(buffer: response.body).contains("not for the web"))
                }
            }
            // Paths in the URL are not ids.
            for uri in ["/api/v1/recordings/..%2F..%2Fetc%2Fpasswd/file", "/api/v1/recordings/../../etc/passwd", "/api/v1/stills/%2Fetc%2Fpasswd"] {
                try await client.execute(uri: uri, method: .get) { response in
                    #expect(response.status == .notFound, "\(uri)")
                    #expect(!String(buffer: response.body).contains("root:"))
                }
            }
        }
    }

    /// An index that cannot be read answers 500 with a log line, never 404 (the recording may
    /// well be there) nor an empty list.
    @Test func anIndexThatCannotBeReadIsAServerErrorNotNotFound() async throws {
        let recording = try await recorded()
        defer { recording.remove() }
        let segment = try #require(try recording.keeper.index.entries(kind: .segment, states: [.complete]).first)
        let broken = RecordingInspector.run("/usr/bin/python3", ["-c", """
            import sqlite3, sys
            c = sqlite3.connect(sys.argv[1])
            c.execute('ALTER TABLE recordings RENAME TO recordings_elsewhere')
            c.execute('ALTER TABLE motion_events RENAME TO motion_events_elsewhere')
            c.commit()
            """, recording.dir.path + "/" + StorageLayout.indexFileName])
        #expect(broken.status == 0, "\(broken.errorOutput)")
        try await recording.server().application().test(.router) { client in
            for uri in [
                "/api/v1/recordings/\(segment.id)/file", "/api/v1/stills/1", "/api/v1/events/1/thumbnail.jpg", "/api/v1/cameras",
                "/api/v1/cameras/synthetic-0/recordings?from=today&to=now", "/api/v1/cameras/synthetic-0/stills?from=today&to=now",
                "/api/v1/cameras/synthetic-0/events?from=today&to=now", "/api/v1/cameras/synthetic-0/clip.mp4?from=today&to=now",
            ] {
                try await client.execute(uri: uri, method: .get) { response in
                    #expect(response.status == .internalServerError, "\(uri)")
                    #expect(String(buffer: response.body).contains("the recordings index cannot be read"), "\(uri)")
                }
            }
        }
    }
}
