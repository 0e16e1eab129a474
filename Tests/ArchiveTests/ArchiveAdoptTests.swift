import Archive
import CaptureTesting
import Crypto
import Foundation
import NIOCore
import Recorder
import S3
import Testing

/// `vigil archive adopt` against a real S3 server (moto): the files a node archived alone before
/// it joined a cluster move from `PREFIX/PATH` into `PREFIX/NODE/PATH`, metadata and all; a run
/// stopped after its copy is finished by the next; nothing else in the bucket is touched.
@Suite(.serialized) struct ArchiveAdoptTests {
    @Test func filesArchivedBeforeJoiningMoveIntoTheNodesFolderOnce() async throws {
        let server = try await S3TestServer()
        defer { server.stop() }
        let dir = try TemporaryDirectory("vigil-adopt")
        defer { dir.remove() }
        let client = S3Client(endpoint: server.endpoint, keys: server.keys)
        func put(_ key: String, _ text: String, metadata: [String: String] = [:]) async throws {
            let bytes = Array(text.utf8)
            _ = try await client.putObject(key: key, body: ByteBuffer(bytes: bytes), sha256: Array(SHA256.hash(data: bytes)),
                                           contentType: "video/mp4", metadata: metadata)
        }
        try await put("site/cam/video/a.mp4", "archived alone", metadata: ["vigil-camera": "cam"])
        try await put("site/cam/video/b.mp4", "copied before a stop")
        try await put("site/node-a/cam/video/b.mp4", "copied before a stop")
        try await put("site/cam/video/c.mp4", "not this node's")
        try await put("site/node-a/cam/video/d.mp4", "archived since")
        try await put("site/node-b/cam/video/a.mp4", "node-b's")
        let index = try RecordingIndex(root: dir.path)
        for path in ["cam/video/a.mp4", "cam/video/b.mp4", "cam/video/d.mp4"] {
            try index.putArchived(path: path, bytes: 14, sha256: nil, local: false, nowNanos: 1)
        }
        let keys = server.keys
        let settings = ArchiveSettings(bucket: server.bucket, prefix: "site", endpoint: server.endpointURL, pathStyle: true,
                                       credentials: .init(accessKeyID: keys.accessKeyID, secretAccessKey: keys.secretAccessKey, sessionToken: nil, source: "a test"))
            .placed(node: "node-a")
        let service = ArchiveService(settings: settings, root: dir.path, index: index, storage: nil)
        let first = try await service.adopt()
        #expect(first.moved == 1 && first.finished == 1 && first.inPlace == 1 && first.bytes == 14, "\(first)")
        func listed() async throws -> [String] {
            try await client.listObjects(prefix: "site", continuationToken: nil).objects.map(\.key).sorted()
        }
        #expect(try await listed() == [
            "site/cam/video/c.mp4", "site/node-a/cam/video/a.mp4", "site/node-a/cam/video/b.mp4", "site/node-a/cam/video/d.mp4",
            "site/node-b/cam/video/a.mp4",
        ])
        let moved = try #require(try await client.headObject(key: "site/node-a/cam/video/a.mp4"))
        #expect(moved.size == 14 && moved.metadata["vigil-camera"] == "cam", "\(moved.metadata)")
        // Again: nothing left to move.
        let second = try await service.adopt()
        #expect(second.moved == 0 && second.finished == 0 && second.inPlace == 3, "\(second)")
        await service.close()
        try await client.shutdown()
    }
}
