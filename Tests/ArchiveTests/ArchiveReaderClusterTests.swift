import Archive
import CaptureTesting
import Crypto
import Foundation
import NIOCore
import Recorder
import S3
import Testing

/// `[archive]` with `[cluster]`, against a real S3 server (moto): a node reads its own files from
/// its folder, or from their key of before it joined a cluster; another node's files only from
/// that node's folder.
@Suite(.serialized) struct ArchiveReaderClusterTests {
    @Test func aNodeReadsItsFolderItsKeysFromBeforeAndAnotherNodesFolder() async throws {
        let server = try await S3TestServer()
        defer { server.stop() }
        let client = S3Client(endpoint: server.endpoint, keys: server.keys)
        func put(_ key: String, _ text: String) async throws {
            let bytes = Array(text.utf8)
            _ = try await client.putObject(key: key, body: ByteBuffer(bytes: bytes), sha256: Array(SHA256.hash(data: bytes)),
                                           contentType: "video/mp4", metadata: [:])
        }
        try await put("site/cam/video/before.mp4", "archived alone")
        try await put("site/node-a/cam/video/now.mp4", "node-a's")
        try await put("site/node-b/cam/video/now.mp4", "node-b's")
        try await client.shutdown()

        let keys = server.keys
        let alone = ArchiveSettings(bucket: server.bucket, prefix: "site", endpoint: server.endpointURL, pathStyle: true,
                                    credentials: .init(accessKeyID: keys.accessKeyID, secretAccessKey: keys.secretAccessKey, sessionToken: nil, source: "a test"))
        let settings = alone.placed(node: "node-a")
        #expect(settings.prefix == "site/node-a" && settings.url == "s3://\(server.bucket)/site/node-a")
        #expect(settings.key(for: "cam/video/x.mp4") == "site/node-a/cam/video/x.mp4")
        #expect(settings.path(for: "site/node-a/cam/video/x.mp4") == "cam/video/x.mp4" && settings.path(for: "site/node-b/cam/video/x.mp4") == nil)
        #expect(settings.keyBeforeCluster(for: "cam/video/x.mp4") == "site/cam/video/x.mp4" && alone.keyBeforeCluster(for: "cam/video/x.mp4") == nil)

        let reader = ArchiveReader(settings: settings)
        func read(_ path: String, node: String? = nil) async -> String? {
            guard let stream = try? await reader.open(path: path, node: node, range: nil),
                  let body = try? await stream.body.collect(upTo: 1 << 20) else { return nil }
            return String(buffer: body)
        }
        #expect(await read("cam/video/now.mp4") == "node-a's")
        #expect(await read("cam/video/before.mp4") == "archived alone", "a file archived before the node joined")
        #expect(await read("cam/video/now.mp4", node: "node-b") == "node-b's")
        #expect(await read("cam/video/before.mp4", node: "node-b") == nil, "another node's file is never read from a key without its folder")
        #expect(try await reader.exists(path: "cam/video/now.mp4", node: "node-b"))
        #expect(try await !reader.exists(path: "cam/video/before.mp4", node: "node-b"))
        // The redirect (`redirect = true`) points where the file is.
        #expect(await reader.presignedURL(path: "cam/video/before.mp4").contains("/site/cam/video/before.mp4?"))
        #expect(await reader.presignedURL(path: "cam/video/now.mp4").contains("/site/node-a/cam/video/now.mp4?"))
        #expect(await reader.presignedURL(path: "cam/video/now.mp4", node: "node-b").contains("/site/node-b/cam/video/now.mp4?"))
        await reader.close()
    }
}
