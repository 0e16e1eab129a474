/// Where the bucket is: any S3-compatible service (AWS, MinIO, Ceph, moto …).
public struct S3Endpoint: Sendable, Equatable {
    /// `"http"` or `"https"`.
    public var scheme: String
    public var host: String
    public var port: Int
    public var bucket: String
    public var region: String
    /// true: `http://host:port/bucket/key`; false: `bucket.host/key` (AWS's virtual-hosted style).
    public var pathStyle: Bool

    public init(scheme: String, host: String, port: Int, bucket: String, region: String, pathStyle: Bool) {
        self.scheme = scheme
        self.host = host
        self.port = port
        self.bucket = bucket
        self.region = region
        self.pathStyle = pathStyle
    }

    /// The `Host` header: the port only when it is not the scheme's default, as HTTP clients send it
    /// (the header is signed, so it must match what goes on the wire).
    var hostHeader: String {
        let name = pathStyle ? host : "\(bucket).\(host)"
        let bracketed = name.contains(":") ? "[\(name)]" : name
        return port == defaultPort ? bracketed : "\(bracketed):\(port)"
    }

    private var defaultPort: Int { scheme == "https" ? 443 : 80 }

    /// The encoded path of `key` (each segment percent-encoded, `/` kept), or of the bucket when nil.
    func encodedPath(key: String?) -> String {
        let bucketPath = pathStyle ? "/" + SigV4Signer.uriEncode(bucket, keepSlash: false) : ""
        guard let key else { return bucketPath.isEmpty ? "/" : bucketPath }
        return bucketPath + "/" + SigV4Signer.uriEncode(key, keepSlash: true)
    }

    /// `scheme://Host` followed by `path` and the query.
    func url(encodedPath: String, query: String) -> String {
        "\(scheme)://\(hostHeader)\(encodedPath)" + (query.isEmpty ? "" : "?\(query)")
    }
}

/// S3 credentials. Printing them never shows the secret or the session token (same rule as
/// camera passwords): they end up in logs and test output otherwise.
public struct S3Keys: Sendable, CustomStringConvertible, CustomDebugStringConvertible {
    public var accessKeyID: String
    public var secretAccessKey: String
    public var sessionToken: String?

    public init(accessKeyID: String, secretAccessKey: String, sessionToken: String?) {
        self.accessKeyID = accessKeyID
        self.secretAccessKey = secretAccessKey
        self.sessionToken = sessionToken
    }

    public var description: String {
        "S3Keys(accessKeyID: \(accessKeyID), secretAccessKey: ***" + (sessionToken == nil ? ")" : ", sessionToken: ***)")
    }

    public var debugDescription: String { description }
}
