@testable import S3
import AsyncHTTPClient
import CaptureTesting
import Crypto
import Foundation
import NIOCore
import Testing

/// The client against a real S3 server (moto, auth on unless said otherwise): moto's botocore
/// checks every signature, and boto3 reads back what was stored. Each test starts its own moto.
@Suite(.serialized) struct S3ClientTests {
    static func bytes(_ count: Int, seed: UInt64) -> [UInt8] {
        var random = SeededRandom(seed: seed)
        return (0..<count).map { _ in UInt8.random(in: 0...255, using: &random) }
    }

    static func sha256(_ bytes: [UInt8]) -> [UInt8] { Array(SHA256.hash(data: bytes)) }
    static func hex(_ bytes: [UInt8]) -> String { bytes.map { String(format: "%02x", $0) }.joined() }

    /// Runs `body` with a client on a fresh moto (auth on unless `authentication` is false).
    static func withMoto(
        authentication: Bool = true, _ body: (S3TestServer, S3Client) async throws -> Void
    ) async throws {
        let server = try await S3TestServer()
        defer { server.stop() }
        if authentication { try await server.enableAuthentication() }
        let client = S3Client(endpoint: server.endpoint, keys: server.keys)
        do {
            try await body(server, client)
        } catch {
            try await client.shutdown()
            throw error
        }
        try await client.shutdown()
    }

    /// Expects `operation` to fail with an `S3Error` and returns it.
    static func failure(_ operation: () async throws -> Void) async -> S3Error? {
        do {
            try await operation()
            return nil
        } catch {
            return error as? S3Error
        }
    }

    @Test func putHeadGetListDelete() async throws {
        try await Self.withMoto { server, client in
            let prefix = "cam 1/video/2026-11-27/"
            let names = ["10-00-00+1.mp4", "10-00-01.mp4", "10-00-02.mp4"]
            var contents: [String: [UInt8]] = [:]
            for (index, name) in names.enumerated() {
                let data = Self.bytes(1000 + index, seed: UInt64(index))
                contents[prefix + name] = data
                let etag = try await client.putObject(
                    key: prefix + name, body: ByteBuffer(bytes: data), sha256: Self.sha256(data), contentType: "video/mp4",
                    metadata: ["vigil": "v1;sha256=\(Self.hex(Self.sha256(data)));camera=caméra 1"])
                #expect(!etag.isEmpty)
            }
            let key = prefix + names[0]
            let data = try #require(contents[key])

            let head = try #require(try await client.headObject(key: key))
            #expect(head.size == Int64(data.count))
            #expect(head.checksumSHA256 == Data(Self.sha256(data)).base64EncodedString())
            #expect(head.metadata["vigil"] == "v1;sha256=\(Self.hex(Self.sha256(data)));camera=caméra 1")
            #expect(try await server.objectSHA256(key) == Self.hex(Self.sha256(data)))
            #expect(try await client.headObject(key: prefix + "absent.mp4") == nil)

            let range = try await client.getObject(key: key, range: 10...109)
            #expect(range.status == 206)
            #expect(range.contentLength == 100)
            #expect(range.contentRange == "bytes 10-109/\(data.count)")
            #expect(Array(try await range.body.collect(upTo: 1 << 20).readableBytesView) == Array(data[10...109]))
            let whole = try await client.getObject(key: key, range: nil)
            #expect(whole.status == 200)
            #expect(Array(try await whole.body.collect(upTo: 1 << 20).readableBytesView) == data)

            let listed = try await client.listObjects(prefix: prefix, continuationToken: nil)
            #expect(listed.next == nil)
            #expect(Set(listed.objects.map(\.key)) == Set(contents.keys))
            #expect(listed.objects.allSatisfy { $0.size == Int64(contents[$0.key]?.count ?? -1) })
            // Two pages of two: the continuation token comes back and is signed correctly.
            let first = try await client.listObjects(prefix: prefix, continuationToken: nil, maxKeys: 2)
            let token = try #require(first.next)
            let second = try await client.listObjects(prefix: prefix, continuationToken: token, maxKeys: 2)
            #expect(second.next == nil)
            #expect(Set((first.objects + second.objects).map(\.key)) == Set(contents.keys))
            #expect(try await client.listObjects(prefix: "other/", continuationToken: nil).objects.isEmpty)

            try await client.deleteObject(key: key)
            #expect(try await client.headObject(key: key) == nil)
            #expect(Set(try await server.listKeys()) == Set(contents.keys).subtracting([key]))
            try await client.checkBucket()
        }
    }

    @Test func multipartUploadAndCompositeChecksum() async throws {
        try await Self.withMoto { server, client in
            let key = "cam/video/2026-11-27/big.mp4"
            let part1 = Self.bytes(5 << 20, seed: 1), part2 = Self.bytes((5 << 20) + 123, seed: 2)
            let uploadID = try await client.createMultipartUpload(key: key, contentType: "video/mp4", metadata: ["vigil": "v1"])
            #expect(try await client.listMultipartUploads(prefix: "cam/").map(\.uploadID) == [uploadID])
            let etag1 = try await client.uploadPart(
                key: key, uploadID: uploadID, number: 1, body: ByteBuffer(bytes: part1), sha256: Self.sha256(part1))
            let etag2 = try await client.uploadPart(
                key: key, uploadID: uploadID, number: 2, body: ByteBuffer(bytes: part2), sha256: Self.sha256(part2))

            let parts = try await client.listParts(key: key, uploadID: uploadID)
            #expect(parts.map(\.number) == [1, 2])
            #expect(parts.map(\.size) == [Int64(part1.count), Int64(part2.count)])
            #expect(parts.map(\.etag) == [etag1, etag2])

            let etag = try await client.completeMultipartUpload(key: key, uploadID: uploadID, parts: [
                S3CompletedPart(number: 1, etag: etag1, sha256: Self.sha256(part1)),
                S3CompletedPart(number: 2, etag: etag2, sha256: Self.sha256(part2)),
            ])
            #expect(etag.hasSuffix("-2\""))
            #expect(try await client.listMultipartUploads(prefix: "cam/").isEmpty)

            let head = try #require(try await client.headObject(key: key))
            #expect(head.size == Int64(part1.count + part2.count))
            // S3's SHA-256 of a multipart object is composite: the hash of the parts' digests.
            let composite = Data(Self.sha256(Self.sha256(part1) + Self.sha256(part2))).base64EncodedString()
            #expect(head.checksumSHA256 == composite || head.checksumSHA256 == composite + "-2", "\(head.checksumSHA256 ?? "none")")
            #expect(head.metadata["vigil"] == "v1")
            #expect(try await server.objectSHA256(key) == Self.hex(Self.sha256(part1 + part2)))
        }
    }

    @Test func abortAndAbortAgain() async throws {
        try await Self.withMoto { _, client in
            let key = "cam/video/2026-11-27/aborted.mp4"
            let uploadID = try await client.createMultipartUpload(key: key, contentType: "video/mp4", metadata: [:])
            let part = Self.bytes(1000, seed: 3)
            _ = try await client.uploadPart(key: key, uploadID: uploadID, number: 1, body: ByteBuffer(bytes: part), sha256: Self.sha256(part))
            try await client.abortMultipartUpload(key: key, uploadID: uploadID)
            #expect(try await client.listMultipartUploads(prefix: "").isEmpty)
            // Already gone (a restart that aborts twice): done, not an error.
            try await client.abortMultipartUpload(key: key, uploadID: uploadID)
            let error = await Self.failure { _ = try await client.listParts(key: key, uploadID: uploadID) }
            #expect(error?.code == "NoSuchUpload")
            #expect(try await client.headObject(key: key) == nil)
        }
    }

    /// ListParts over three pages of one part: the marker each page gives is followed.
    @Test func listPartsFollowsPages() async throws {
        try await Self.withMoto { _, client in
            let key = "cam/video/2026-11-27/paged.mp4"
            let uploadID = try await client.createMultipartUpload(key: key, contentType: "video/mp4", metadata: [:])
            var etags: [String] = []
            for number in 1...3 {
                let part = Self.bytes(100 * number, seed: UInt64(10 + number))
                etags.append(try await client.uploadPart(
                    key: key, uploadID: uploadID, number: number, body: ByteBuffer(bytes: part), sha256: Self.sha256(part)))
            }
            let parts = try await client.listParts(key: key, uploadID: uploadID, pageSize: 1)
            #expect(parts.map(\.number) == [1, 2, 3])
            #expect(parts.map(\.size) == [100, 200, 300])
            #expect(parts.map(\.etag) == etags)
            try await client.abortMultipartUpload(key: key, uploadID: uploadID)
        }
    }

    /// moto answers presigned GETs only while its auth is off (a moto quirk, plan29 §2.2).
    @Test func presignedGetURLServesTheObject() async throws {
        try await Self.withMoto(authentication: false) { _, client in
            let data = Self.bytes(3000, seed: 5)
            let key = "cam/stills/2026-11-27/a b+c.jpg"
            _ = try await client.putObject(key: key, body: ByteBuffer(bytes: data), sha256: Self.sha256(data), contentType: "image/jpeg", metadata: [:])
            let url = client.presignedGetURL(key: key, expires: 3600)
            #expect(url.contains("X-Amz-Signature=") && url.contains("/a%20b%2Bc.jpg?"))
            var request = HTTPClientRequest(url: url)
            request.headers.add(name: "Range", value: "bytes=100-199")
            let response = try await HTTPClient.shared.execute(request, timeout: .seconds(30))
            #expect(response.status.code == 206)
            #expect(Array(try await response.body.collect(upTo: 1 << 20).readableBytesView) == Array(data[100...199]))
        }
    }

    @Test func wrongSecretIsAuth() async throws {
        try await Self.withMoto { server, _ in
            var keys = server.keys
            keys.secretAccessKey += "x"
            let client = S3Client(endpoint: server.endpoint, keys: keys)
            let error = await Self.failure { try await client.checkBucket() }
            try await client.shutdown()
            #expect(error?.reason == .auth)
            #expect(error?.status == 403)
            #expect(error?.code == "SignatureDoesNotMatch")
            #expect(error?.description.contains(keys.secretAccessKey) == false)
        }
    }

    @Test func unknownKeyIsAuth() async throws {
        try await Self.withMoto { server, _ in
            let client = S3Client(endpoint: server.endpoint, keys: S3Keys(accessKeyID: "AKIAUNKNOWN0000000", secretAccessKey: "x", sessionToken: nil))
            let data = Self.bytes(10, seed: 6)
            let error = await Self.failure {
                _ = try await client.putObject(key: "a", body: ByteBuffer(bytes: data), sha256: Self.sha256(data), contentType: "video/mp4", metadata: [:])
            }
            try await client.shutdown()
            #expect(error?.reason == .auth)
            #expect(error?.code == "InvalidAccessKeyId")
        }
    }

    @Test func missingBucketIsConfig() async throws {
        try await Self.withMoto { server, _ in
            var endpoint = server.endpoint
            endpoint.bucket = "no-such-bucket"
            let client = S3Client(endpoint: endpoint, keys: server.keys)
            let error = await Self.failure { try await client.checkBucket() }
            try await client.shutdown()
            #expect(error?.reason == .config)
            #expect(error?.code == "NoSuchBucket")
        }
    }

    @Test func nothingListeningIsNetwork() async throws {
        let endpoint = S3Endpoint(
            scheme: "http", host: "127.0.0.1", port: LoopbackCameraServer.freePort(), bucket: "vigil", region: "us-east-1", pathStyle: true)
        let client = S3Client(endpoint: endpoint, keys: S3Keys(accessKeyID: "a", secretAccessKey: "b", sessionToken: nil))
        let error = await Self.failure { try await client.checkBucket() }
        try await client.shutdown()
        #expect(error?.reason == .network, "\(String(describing: error))")
    }

    /// A server that accepts the connection (the kernel's backlog) but never answers.
    @Test func silentServerIsTimeout() async throws {
        let listener = SilentListener()
        let endpoint = S3Endpoint(scheme: "http", host: "127.0.0.1", port: listener.port, bucket: "vigil", region: "us-east-1", pathStyle: true)
        let client = S3Client(endpoint: endpoint, keys: S3Keys(accessKeyID: "a", secretAccessKey: "b", sessionToken: nil), requestTimeout: .seconds(1))
        let error = await Self.failure { _ = try await client.headObject(key: "a") }
        try await client.shutdown()
        #expect(error?.reason == .timeout, "\(String(describing: error))")
        withExtendedLifetime(listener) {}
    }
}
