import AsyncHTTPClient
import CheckedMath
import Crypto
import Foundation
import NIOCore
import NIOHTTP1

/// The S3 calls the archive makes, signed with SigV4, over async-http-client on NIO's shared
/// event loops. Every failure is an `S3Error` with a reason; nothing a server answers can trap.
public final class S3Client: Sendable {
    public let endpoint: S3Endpoint
    private let signer: SigV4Signer
    private let http: HTTPClient
    private let requestTimeout: TimeAmount

    public init(endpoint: S3Endpoint, keys: S3Keys, requestTimeout: TimeAmount = .seconds(60)) {
        self.endpoint = endpoint
        self.requestTimeout = requestTimeout
        signer = SigV4Signer(
            accessKeyID: keys.accessKeyID, secretAccessKey: keys.secretAccessKey, sessionToken: keys.sessionToken,
            region: endpoint.region, service: "s3")
        var configuration = HTTPClient.Configuration(
            // A redirect means a wrong region or endpoint: surface it instead of following it.
            redirectConfiguration: .disallow,
            timeout: .init(connect: .seconds(10), read: requestTimeout, write: requestTimeout),
            // S3 objects are stored as sent; decompressing would break checksums and ranges.
            decompression: .disabled)
        configuration.httpVersion = .http1Only
        // NIO's process-wide loops (MultiThreadedEventLoopGroup.singleton): no threads of its own to shut down.
        http = HTTPClient(eventLoopGroup: HTTPClient.defaultEventLoopGroup, configuration: configuration)
    }

    /// Shuts the HTTP client down; call once, before the client goes away.
    public func shutdown() async throws {
        try await http.shutdown()
    }

    // MARK: Objects

    /// PutObject with the body's SHA-256 as the signed payload hash and as its checksum. Returns the ETag.
    public func putObject(
        key: String, body: ByteBuffer, sha256: [UInt8], contentType: String, metadata: [String: String]
    ) async throws(S3Error) -> String {
        let label = describe("PUT", key)
        var headers = try checksumHeaders(sha256, label) + metadataHeaders(metadata, label)
        headers.append(("Content-Type", contentType))
        let response = try await send(.PUT, key: key, headers: headers, body: body, payloadHash: Hex.string(sha256), label: label)
        try await expectSuccess(response, label)
        try await readBody(response, label)
        return try etag(response.headers, label)
    }

    /// CreateMultipartUpload with SHA-256 checksums for its parts. Returns the UploadId.
    public func createMultipartUpload(key: String, contentType: String, metadata: [String: String]) async throws(S3Error) -> String {
        let label = describe("POST", key, "uploads")
        var headers = try metadataHeaders(metadata, label)
        headers += [("Content-Type", contentType), ("x-amz-checksum-algorithm", "SHA256")]
        let root = try await xmlCall(.POST, key: key, query: [("uploads", "")], headers: headers, label: label)
        guard let uploadID = root.value("UploadId"), !uploadID.isEmpty else { throw malformed("no UploadId", label) }
        return uploadID
    }

    /// UploadPart `number` (1…10000). Returns the part's ETag.
    public func uploadPart(key: String, uploadID: String, number: Int, body: ByteBuffer, sha256: [UInt8]) async throws(S3Error) -> String {
        let label = describe("PUT", key, "part \(number)")
        guard (1...10_000).contains(number) else { throw S3Error(reason: .local, message: "part number \(number) is outside 1…10000", request: label) }
        let response = try await send(
            .PUT, key: key, query: [("partNumber", String(number)), ("uploadId", uploadID)],
            headers: try checksumHeaders(sha256, label), body: body, payloadHash: Hex.string(sha256), label: label)
        try await expectSuccess(response, label)
        try await readBody(response, label)
        return try etag(response.headers, label)
    }

    /// CompleteMultipartUpload. S3 may answer 200 with an `<Error>` body (the failure shows only
    /// after the headers are sent), so the body decides. Returns the object's ETag.
    public func completeMultipartUpload(key: String, uploadID: String, parts: [S3CompletedPart]) async throws(S3Error) -> String {
        let label = describe("POST", key, "complete")
        for part in parts where part.sha256.count != 32 {
            throw S3Error(reason: .local, message: "part \(part.number)'s SHA-256 has \(part.sha256.count) bytes, not 32", request: label)
        }
        let body = ByteBuffer(string: S3XML.completeBody(parts))
        let root = try await xmlCall(
            .POST, key: key, query: [("uploadId", uploadID)], headers: [("Content-Type", "application/xml")], body: body, label: label)
        guard let etag = root.value("ETag"), !etag.isEmpty else { throw malformed("no ETag in the Complete answer", label) }
        return etag
    }

    /// AbortMultipartUpload; an upload S3 no longer knows (`NoSuchUpload`) counts as aborted.
    public func abortMultipartUpload(key: String, uploadID: String) async throws(S3Error) {
        let label = describe("DELETE", key, "upload")
        let response = try await send(.DELETE, key: key, query: [("uploadId", uploadID)], label: label)
        do {
            try await expectSuccess(response, label)
            try await readBody(response, label)
        } catch let error where error.code == "NoSuchUpload" {
            return
        }
    }

    /// ListParts, every page: what S3 holds of an upload, to resume it after a restart.
    public func listParts(key: String, uploadID: String) async throws(S3Error) -> [S3ListedPart] {
        try await listParts(key: key, uploadID: uploadID, pageSize: nil)
    }

    /// ListParts with a chosen page size (tests use small pages to cross page boundaries).
    func listParts(key: String, uploadID: String, pageSize: Int?) async throws(S3Error) -> [S3ListedPart] {
        let label = describe("GET", key, "parts")
        var parts: [S3ListedPart] = []
        var marker: String?
        for _ in 0..<Self.maxPages {
            var query = [("uploadId", uploadID)]
            if let pageSize { query.append(("max-parts", String(pageSize))) }
            if let marker { query.append(("part-number-marker", marker)) }
            let root = try await xmlCall(.GET, key: key, query: query, label: label)
            for element in root.children("Part") {
                guard let number = element.value("PartNumber").flatMap({ Int($0) }), let etag = element.value("ETag"),
                      let size = S3Size.parse(element.value("Size")) else {
                    throw malformed("a listed part without a valid number, ETag or size", label)
                }
                parts.append(S3ListedPart(number: number, etag: etag, size: size))
            }
            guard parts.count <= 10_000 else { throw malformed("more than 10000 parts listed", label) }
            guard root.value("IsTruncated") == "true" else { return parts }
            guard let next = root.value("NextPartNumberMarker"), !next.isEmpty, next != marker else {
                throw malformed("a truncated part list without a new NextPartNumberMarker", label)
            }
            marker = next
        }
        throw malformed("more than \(Self.maxPages) pages of parts", label)
    }

    /// ListMultipartUploads under `prefix`, every page: uploads left by a process that was killed.
    public func listMultipartUploads(prefix: String) async throws(S3Error) -> [(key: String, uploadID: String)] {
        let label = describe("GET", nil, "uploads")
        var uploads: [(key: String, uploadID: String)] = []
        var markers: (key: String, uploadID: String)?
        for _ in 0..<Self.maxPages {
            var query = [("uploads", ""), ("prefix", prefix)]
            if let markers { query += [("key-marker", markers.key), ("upload-id-marker", markers.uploadID)] }
            let root = try await xmlCall(.GET, key: nil, query: query, label: label)
            for element in root.children("Upload") {
                guard let key = element.value("Key"), let uploadID = element.value("UploadId") else {
                    throw malformed("a listed upload without Key or UploadId", label)
                }
                uploads.append((key, uploadID))
            }
            guard uploads.count <= Self.maxListedUploads else { throw malformed("more than \(Self.maxListedUploads) uploads listed", label) }
            guard root.value("IsTruncated") == "true" else { return uploads }
            let next = (key: root.value("NextKeyMarker") ?? "", uploadID: root.value("NextUploadIdMarker") ?? "")
            guard !next.key.isEmpty, next.key != markers?.key || next.uploadID != markers?.uploadID else {
                throw malformed("a truncated upload list without new markers", label)
            }
            markers = next
        }
        throw malformed("more than \(Self.maxPages) pages of uploads", label)
    }

    /// HeadObject with checksum mode on (so S3 returns the SHA-256 it stored); nil when there is no
    /// such object.
    public func headObject(key: String) async throws(S3Error) -> S3ObjectHead? {
        let label = describe("HEAD", key)
        let response = try await send(.HEAD, key: key, headers: [("x-amz-checksum-mode", "ENABLED")], label: label)
        if response.status == .notFound { return nil }
        try await expectSuccess(response, label)
        guard let size = S3Size.parse(response.headers.first(name: "content-length")) else {
            throw malformed("no valid Content-Length", label)
        }
        var metadata: [String: String] = [:]
        for (name, value) in response.headers where name.lowercased().hasPrefix(Self.metadataPrefix) {
            let short = String(name.lowercased().dropFirst(Self.metadataPrefix.count))
            metadata[short] = value.removingPercentEncoding ?? value
        }
        return S3ObjectHead(
            size: size, etag: try etag(response.headers, label),
            checksumSHA256: response.headers.first(name: "x-amz-checksum-sha256"), metadata: metadata)
    }

    /// ListObjectsV2, one page of up to 1000 keys; `next` is the token for the following page.
    public func listObjects(prefix: String, continuationToken: String?) async throws(S3Error) -> (objects: [S3ListedObject], next: String?) {
        try await listObjects(prefix: prefix, continuationToken: continuationToken, maxKeys: 1000)
    }

    /// ListObjectsV2 with a chosen page size (tests use small pages to cross page boundaries).
    public func listObjects(
        prefix: String, continuationToken: String?, maxKeys: Int
    ) async throws(S3Error) -> (objects: [S3ListedObject], next: String?) {
        let label = describe("GET", nil, "list \(prefix)")
        var query = [("list-type", "2"), ("prefix", prefix), ("max-keys", String(maxKeys))]
        if let continuationToken { query.append(("continuation-token", continuationToken)) }
        let root = try await xmlCall(.GET, key: nil, query: query, label: label)
        var objects: [S3ListedObject] = []
        for element in root.children("Contents") {
            guard let key = element.value("Key"), let size = S3Size.parse(element.value("Size")) else {
                throw malformed("a listed object without Key or a valid Size", label)
            }
            objects.append(S3ListedObject(key: key, size: size))
        }
        guard root.value("IsTruncated") == "true" else { return (objects, nil) }
        guard let next = root.value("NextContinuationToken"), !next.isEmpty, next != continuationToken else {
            throw malformed("a truncated listing without a new NextContinuationToken", label)
        }
        return (objects, next)
    }

    /// GetObject, whole or one byte range; the body is left streaming for the caller to forward.
    public func getObject(key: String, range: ClosedRange<Int64>?) async throws(S3Error) -> S3ObjectStream {
        let label = describe("GET", key)
        var headers: [(name: String, value: String)] = []
        if let range {
            guard range.lowerBound >= 0 else { throw S3Error(reason: .local, message: "negative range \(range)", request: label) }
            headers.append(("Range", "bytes=\(range.lowerBound)-\(range.upperBound)"))
        }
        // No overall deadline: a long body streams at the reader's pace; the read timeout catches a stall.
        let response = try await send(.GET, key: key, headers: headers, deadline: .distantFuture, label: label)
        try await expectSuccess(response, label)
        guard let length = S3Size.parse(response.headers.first(name: "content-length")) else {
            throw malformed("no valid Content-Length", label)
        }
        return S3ObjectStream(
            status: Int(response.status.code), contentLength: length, contentRange: response.headers.first(name: "content-range"),
            body: response.body)
    }

    /// DeleteObject (S3 answers 204 for a key that is already gone).
    public func deleteObject(key: String) async throws(S3Error) {
        let label = describe("DELETE", key)
        let response = try await send(.DELETE, key: key, label: label)
        try await expectSuccess(response, label)
        try await readBody(response, label)
    }

    /// A GET URL anyone can fetch for `expires` seconds (clamped to S3's 1…604800), for redirects.
    public func presignedGetURL(key: String, expires: Int, now: Date = Date()) -> String {
        let path = endpoint.encodedPath(key: key)
        let query = signer.presignedQuery(
            method: "GET", encodedPath: path, host: endpoint.hostHeader, expires: min(max(expires, 1), 604_800), date: now)
        return endpoint.url(encodedPath: path, query: query)
    }

    /// ListObjectsV2 with one key: wrong credentials, a missing bucket or an unreachable endpoint
    /// surface as their `S3Error` (check-config's probe).
    public func checkBucket() async throws(S3Error) {
        _ = try await listObjects(prefix: "", continuationToken: nil, maxKeys: 1)
    }

    // MARK: Requests

    static let metadataPrefix = "x-amz-meta-"
    /// Listings stop here rather than loop on a server that never stops paging (10000 parts need 10).
    static let maxPages = 100_000
    /// Unfinished uploads kept in memory at most: far more than kill -9 can leave behind.
    static let maxListedUploads = 1_000_000

    func describe(_ method: String, _ key: String?, _ what: String? = nil) -> String {
        "\(method) \(endpoint.bucket)" + (key.map { "/\($0)" } ?? "") + (what.map { " (\($0))" } ?? "")
    }

    /// Signs and sends one request. Requests without a body get a deadline of the request timeout;
    /// those with one get none (a rate-limited 16 MiB part may take minutes, and AWS may work on a
    /// Complete for minutes while it sends whitespace), relying on the read and write timeouts to
    /// catch a stall.
    private func send(
        _ method: HTTPMethod, key: String?, query: [(name: String, value: String)] = [], headers: [(name: String, value: String)] = [],
        body: ByteBuffer? = nil, payloadHash: String = SigV4Signer.emptyPayloadHash, deadline: NIODeadline? = nil, label: String
    ) async throws(S3Error) -> HTTPClientResponse {
        let path = endpoint.encodedPath(key: key)
        var signable = SigV4Request(
            method: method.rawValue, encodedPath: path, query: query,
            headers: [("Host", endpoint.hostHeader), ("x-amz-content-sha256", payloadHash)] + headers, payloadHash: payloadHash)
        signable.headers = signer.signedHeaders(signable, date: Date())
        var request = HTTPClientRequest(url: endpoint.url(encodedPath: path, query: SigV4Signer.canonicalQuery(query)))
        request.method = method
        for (name, value) in signable.headers { request.headers.add(name: name, value: value) }
        if let body { request.body = .bytes(body) }
        let deadline = deadline ?? (body == nil ? .now() + requestTimeout : .distantFuture)
        do {
            return try await http.execute(request, deadline: deadline)
        } catch {
            throw Self.transportError(error, label)
        }
    }

    /// Sends a request whose answer is an XML document, and returns its root; an `<Error>` root is
    /// a failure even with a 2xx status.
    func xmlCall(
        _ method: HTTPMethod, key: String?, query: [(name: String, value: String)], headers: [(name: String, value: String)] = [],
        body: ByteBuffer? = nil, label: String
    ) async throws(S3Error) -> S3XMLElement {
        let payloadHash = body.map { Hex.string(SHA256.hash(data: Array($0.readableBytesView))) } ?? SigV4Signer.emptyPayloadHash
        let response = try await send(method, key: key, query: query, headers: headers, body: body, payloadHash: payloadHash, label: label)
        try await expectSuccess(response, label)
        let root = try await readXML(response, label)
        if let (code, message) = S3XML.error(root) {
            let status = Int(response.status.code)
            throw S3Error(reason: S3Error.reason(status: 500, code: code), status: status, code: code, message: message, request: label)
        }
        return root
    }

    /// Throws the answer's error unless its status is 2xx; the error body is read (bounded) for S3's code.
    private func expectSuccess(_ response: HTTPClientResponse, _ label: String) async throws(S3Error) {
        let status = Int(response.status.code)
        guard !(200..<300).contains(status) else { return }
        var code: String?
        var message = response.status.reasonPhrase
        if let root = try? await readXML(response, label), let error = S3XML.error(root) {
            code = error.code
            if !error.message.isEmpty { message = error.message }
        }
        throw S3Error(reason: S3Error.reason(status: status, code: code), status: status, code: code, message: message, request: label)
    }

    /// An answer's whole body, bounded. Called on empty answers too: a body read to its end lets
    /// the connection go back to the pool.
    @discardableResult
    private func readBody(_ response: HTTPClientResponse, _ label: String) async throws(S3Error) -> ByteBuffer {
        do {
            return try await response.body.collect(upTo: S3XML.maxBodyBytes)
        } catch is NIOTooManyBytesError {
            throw malformed("an answer over \(S3XML.maxBodyBytes) bytes", label)
        } catch {
            throw Self.transportError(error, label)
        }
    }

    private func readXML(_ response: HTTPClientResponse, _ label: String) async throws(S3Error) -> S3XMLElement {
        let buffer = try await readBody(response, label)
        do {
            return try S3XML.parse(Array(buffer.readableBytesView))
        } catch {
            throw malformed(error.description, label)
        }
    }

    private func etag(_ headers: HTTPHeaders, _ label: String) throws(S3Error) -> String {
        guard let etag = headers.first(name: "etag"), !etag.isEmpty else { throw malformed("no ETag", label) }
        return etag
    }

    private func checksumHeaders(_ sha256: [UInt8], _ label: String) throws(S3Error) -> [(name: String, value: String)] {
        guard sha256.count == 32 else { throw S3Error(reason: .local, message: "a SHA-256 of \(sha256.count) bytes, not 32", request: label) }
        return [("x-amz-checksum-sha256", Data(sha256).base64EncodedString()), ("x-amz-sdk-checksum-algorithm", "SHA256")]
    }

    /// `x-amz-meta-<name>` headers. Names must be header-safe; values are percent-encoded outside
    /// printable ASCII (and `%` itself), since S3 keeps only ASCII in headers.
    private func metadataHeaders(_ metadata: [String: String], _ label: String) throws(S3Error) -> [(name: String, value: String)] {
        var headers: [(name: String, value: String)] = []
        for name in metadata.keys.sorted() {
            guard !name.isEmpty, name.utf8.allSatisfy({ Self.isMetadataNameByte($0) }) else {
                throw S3Error(reason: .local, message: "metadata name \"\(name)\" is not [a-z0-9-_]", request: label)
            }
            headers.append((Self.metadataPrefix + name, Self.headerSafe(metadata[name] ?? "")))
        }
        return headers
    }

    private static func isMetadataNameByte(_ byte: UInt8) -> Bool {
        (UInt8(ascii: "a")...UInt8(ascii: "z")).contains(byte) || (UInt8(ascii: "0")...UInt8(ascii: "9")).contains(byte)
            || byte == UInt8(ascii: "-") || byte == UInt8(ascii: "_")
    }

    static func headerSafe(_ value: String) -> String {
        var out = [UInt8]()
        for byte in value.utf8 {
            if byte > 0x20, byte < 0x7F, byte != UInt8(ascii: "%") {
                out.append(byte)
            } else {
                Hex.appendPercentEncoded(byte, to: &out)
            }
        }
        return String(decoding: out, as: UTF8.self)
    }

    private func malformed(_ what: String, _ label: String) -> S3Error {
        S3Error(reason: .server, message: "unreadable answer: \(what)", request: label)
    }

    /// A failure before or while an answer came: timeouts apart from everything else on the network.
    static func transportError(_ error: any Error, _ label: String) -> S3Error {
        if error is CancellationError {
            return S3Error(reason: .local, message: "cancelled", request: label)
        }
        if let error = error as? HTTPClientError {
            switch error {
            case .readTimeout, .writeTimeout, .connectTimeout, .deadlineExceeded, .getConnectionFromPoolTimeout, .tlsHandshakeTimeout:
                return S3Error(reason: .timeout, message: "timed out (\(error))", request: label)
            case .cancelled:
                return S3Error(reason: .local, message: "cancelled", request: label)
            default:
                break
            }
        }
        return S3Error(reason: .network, message: String(describing: error), request: label)
    }
}
