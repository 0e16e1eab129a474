import AsyncHTTPClient

/// What HEAD tells about an object: enough to confirm an upload and to rebuild the index.
public struct S3ObjectHead: Sendable {
    public var size: Int64
    public var etag: String
    /// Base64 as the service sent it; a multipart object's is composite and may end in `-N`.
    public var checksumSHA256: String?
    /// `x-amz-meta-*`, names lower-cased without the prefix, values percent-decoded.
    public var metadata: [String: String]
}

public struct S3ListedObject: Sendable {
    public var key: String
    public var size: Int64
}

public struct S3ListedPart: Sendable {
    public var number: Int
    public var etag: String
    public var size: Int64
}

/// A GetObject answer whose body is still on the wire (backpressured), for serving ranges.
public struct S3ObjectStream: Sendable {
    /// 200, or 206 for a range.
    public var status: Int
    public var contentLength: Int64
    public var contentRange: String?
    public var body: HTTPClientResponse.Body
}
