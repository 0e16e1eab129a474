/// Why an S3 call failed, as the archive's retry policy and its metric label need it: endpoint-wide
/// reasons pause the whole queue, per-file ones restart one file.
public enum S3FailureReason: String, Sendable, CaseIterable {
    /// Connection refused or reset, DNS: the endpoint is unreachable.
    case network
    /// No answer within the request timeout.
    case timeout
    /// 500, 502, 504, `InternalError`, or an answer that cannot be read.
    case server
    /// 503 `SlowDown`, 429: the service asks for fewer requests.
    case throttled
    /// The service refuses the credentials (403, `AuthorizationHeaderMalformed`).
    case auth
    /// `RequestTimeTooSkewed`: this machine's clock is off by more than 15 minutes.
    case clock
    /// Wrong bucket, region or endpoint (`NoSuchBucket`, 301), or another request the service refuses.
    case config
    /// The service saw other bytes than were hashed (`BadDigest`, `XAmzContentSHA256Mismatch`).
    case checksum
    /// Something on this side: a request that cannot be made, a cancelled task.
    case local
}

/// Every failure of `S3Client`, with the S3 error code and message when the service sent one.
public struct S3Error: Error, Sendable, CustomStringConvertible {
    public var reason: S3FailureReason
    /// The HTTP status, when an answer came.
    public var status: Int?
    /// S3's `<Code>` (`SignatureDoesNotMatch`, `NoSuchUpload`, …): per-file handling keys on it.
    public var code: String?
    public var message: String
    /// What was asked, for the log line: `PUT bucket/key`.
    public var request: String

    public init(reason: S3FailureReason, status: Int? = nil, code: String? = nil, message: String, request: String) {
        self.reason = reason
        self.status = status
        self.code = code
        self.message = message
        self.request = request
    }

    /// One line: `S3 PUT vigil/cam/video/…: 403 SignatureDoesNotMatch: <message>`.
    public var description: String {
        let answer = [status.map(String.init), code].compactMap { $0 }.joined(separator: " ")
        return "S3 \(request): " + (answer.isEmpty ? "" : "\(answer): ") + message
    }

    /// The reason for an error answer: S3's code first (it is more precise), then the status.
    public static func reason(status: Int, code: String?) -> S3FailureReason {
        switch code {
        case "InvalidAccessKeyId", "SignatureDoesNotMatch", "AccessDenied", "AuthorizationHeaderMalformed",
             "InvalidToken", "ExpiredToken", "TokenRefreshRequired", "InvalidSecurity":
            return .auth
        case "RequestTimeTooSkewed":
            return .clock
        case "NoSuchBucket", "PermanentRedirect", "TemporaryRedirect", "InvalidBucketName", "IllegalLocationConstraintException":
            return .config
        case "BadDigest", "XAmzContentSHA256Mismatch", "InvalidDigest":
            return .checksum
        case "SlowDown", "Throttling", "ThrottlingException", "RequestLimitExceeded", "ServiceUnavailable":
            return .throttled
        case "InternalError":
            return .server
        case "RequestTimeout":
            return .timeout
        default:
            break
        }
        switch status {
        case 429, 503: return .throttled
        case 401, 403: return .auth
        case 300..<500: return .config
        default: return .server
        }
    }
}
