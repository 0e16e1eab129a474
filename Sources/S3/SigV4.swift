import Crypto
import Foundation
import Synchronization

/// One request as AWS Signature Version 4 sees it. `encodedPath` is the path exactly as sent
/// (S3 encodes it once and never normalizes it); `query` holds raw names and values, which the
/// signer encodes; `headers` are every header to sign, `host` included.
public struct SigV4Request: Sendable {
    public var method: String
    public var encodedPath: String
    public var query: [(name: String, value: String)]
    public var headers: [(name: String, value: String)]
    /// Hex SHA-256 of the body, or `SigV4Signer.unsignedPayload`.
    public var payloadHash: String

    public init(
        method: String, encodedPath: String, query: [(name: String, value: String)] = [],
        headers: [(name: String, value: String)], payloadHash: String
    ) {
        self.method = method
        self.encodedPath = encodedPath
        self.query = query
        self.headers = headers
        self.payloadHash = payloadHash
    }
}

/// AWS Signature Version 4, written once for every S3 call (header-signed requests and presigned
/// URLs). The signing key depends only on the day, so it is derived once a day, not per request.
public struct SigV4Signer: Sendable {
    public let accessKeyID: String
    public let secretAccessKey: String
    public let sessionToken: String?
    public let region: String
    /// `"s3"` for S3; the aws-c-auth test vectors use `"service"`.
    public let service: String
    private let keyCache = SigningKeyCache()

    public static let algorithm = "AWS4-HMAC-SHA256"
    /// SHA-256 of no bytes: the payload hash of GET, HEAD and DELETE.
    public static let emptyPayloadHash = "e3b0c44298fc1c149afbf4c8996fb92427ae41e4649b934ca495991b7852b855"
    /// The payload hash of a presigned URL: the body is not known when the URL is made.
    public static let unsignedPayload = "UNSIGNED-PAYLOAD"

    public init(accessKeyID: String, secretAccessKey: String, sessionToken: String?, region: String, service: String) {
        self.accessKeyID = accessKeyID
        self.secretAccessKey = secretAccessKey
        self.sessionToken = sessionToken
        self.region = region
        self.service = service
    }

    // MARK: Header signing

    /// The headers to send: `request.headers` plus `x-amz-date`, `x-amz-security-token` (with a
    /// session token) and `Authorization`.
    public func signedHeaders(_ request: SigV4Request, date: Date) -> [(name: String, value: String)] {
        let dated = withDateHeaders(request, date: date)
        let (canonical, signedNames) = Self.canonicalRequest(dated)
        let signature = signature(stringToSign: stringToSign(canonicalRequest: canonical, date: date), date: date)
        let authorization = "\(Self.algorithm) Credential=\(accessKeyID)/\(scope(date)), SignedHeaders=\(signedNames), Signature=\(signature)"
        return dated.headers + [("Authorization", authorization)]
    }

    /// `request` with the headers the signer adds before signing (`x-amz-date`, and
    /// `x-amz-security-token` with a session token): they are signed too.
    public func withDateHeaders(_ request: SigV4Request, date: Date) -> SigV4Request {
        var dated = request
        dated.headers.append(("X-Amz-Date", SigV4Time(date).amzDate))
        if let sessionToken { dated.headers.append(("X-Amz-Security-Token", sessionToken)) }
        return dated
    }

    /// The canonical request and its signed-header list (`a;b;c`).
    public static func canonicalRequest(_ request: SigV4Request) -> (text: String, signedHeaders: String) {
        var merged: [String: [String]] = [:]
        for (name, value) in request.headers { merged[name.lowercased(), default: []].append(canonicalHeaderValue(value)) }
        let names = merged.keys.sorted()
        let headerLines = names.map { "\($0):\(merged[$0]!.joined(separator: ","))\n" }.joined()
        let signed = names.joined(separator: ";")
        let text = [
            request.method, request.encodedPath, canonicalQuery(request.query), headerLines, signed, request.payloadHash,
        ].joined(separator: "\n")
        return (text, signed)
    }

    /// `AWS4-HMAC-SHA256`, the time, the scope and the canonical request's hash, one per line.
    public func stringToSign(canonicalRequest: String, date: Date) -> String {
        [Self.algorithm, SigV4Time(date).amzDate, scope(date), Hex.string(SHA256.hash(data: Array(canonicalRequest.utf8)))]
            .joined(separator: "\n")
    }

    /// Hex HMAC of `stringToSign` under the day's signing key.
    public func signature(stringToSign: String, date: Date) -> String {
        let key = signingKey(day: SigV4Time(date).day)
        return Hex.string(HMAC<SHA256>.authenticationCode(for: Array(stringToSign.utf8), using: key))
    }

    /// `YYYYMMDD/region/service/aws4_request`.
    public func scope(_ date: Date) -> String { "\(SigV4Time(date).day)/\(region)/\(service)/aws4_request" }

    // MARK: Presigned URLs

    /// The query string (without `?`) of a presigned request: `query` plus the `X-Amz-*`
    /// parameters, then `X-Amz-Signature`. Only `host` is signed. `payloadHash` is
    /// `unsignedPayload` for S3; the aws-c-auth vectors hash the empty body instead.
    public func presignedQuery(
        method: String, encodedPath: String, query: [(name: String, value: String)] = [], host: String,
        expires: Int, payloadHash: String = SigV4Signer.unsignedPayload, date: Date
    ) -> String {
        var parameters = query + [
            ("X-Amz-Algorithm", Self.algorithm),
            ("X-Amz-Credential", "\(accessKeyID)/\(scope(date))"),
            ("X-Amz-Date", SigV4Time(date).amzDate),
            ("X-Amz-Expires", String(expires)),
            ("X-Amz-SignedHeaders", "host"),
        ]
        if let sessionToken { parameters.append(("X-Amz-Security-Token", sessionToken)) }
        let request = SigV4Request(
            method: method, encodedPath: encodedPath, query: parameters, headers: [("host", host)], payloadHash: payloadHash)
        let signature = signature(stringToSign: stringToSign(canonicalRequest: Self.canonicalRequest(request).text, date: date), date: date)
        return Self.canonicalQuery(parameters) + "&X-Amz-Signature=" + signature
    }

    // MARK: Encoding

    /// Every name and value encoded (`/` too), sorted by name then value, joined with `&`; a
    /// name without a value is `name=`.
    public static func canonicalQuery(_ query: [(name: String, value: String)]) -> String {
        query.map { (uriEncode($0.name, keepSlash: false), uriEncode($0.value, keepSlash: false)) }
            .sorted { $0.0 != $1.0 ? $0.0 < $1.0 : $0.1 < $1.1 }
            .map { "\($0.0)=\($0.1)" }
            .joined(separator: "&")
    }

    /// Each UTF-8 byte outside `A-Z a-z 0-9 - . _ ~` as `%XX` (upper case); `/` kept when asked
    /// (paths and object keys), encoded otherwise (query names and values).
    public static func uriEncode(_ text: String, keepSlash: Bool) -> String {
        var out = [UInt8]()
        out.reserveCapacity(text.utf8.count)
        for byte in text.utf8 {
            switch byte {
            case UInt8(ascii: "A")...UInt8(ascii: "Z"), UInt8(ascii: "a")...UInt8(ascii: "z"), UInt8(ascii: "0")...UInt8(ascii: "9"),
                 UInt8(ascii: "-"), UInt8(ascii: "."), UInt8(ascii: "_"), UInt8(ascii: "~"):
                out.append(byte)
            case UInt8(ascii: "/") where keepSlash:
                out.append(byte)
            default:
                Hex.appendPercentEncoded(byte, to: &out)
            }
        }
        return String(decoding: out, as: UTF8.self)
    }

    /// Leading and trailing spaces removed, inner runs of spaces made one.
    static func canonicalHeaderValue(_ value: String) -> String {
        value.split(separator: " ", omittingEmptySubsequences: true).joined(separator: " ")
    }

    private func signingKey(day: String) -> SymmetricKey {
        keyCache.key(day: day) {
            var key = SymmetricKey(data: Array("AWS4\(secretAccessKey)".utf8))
            for part in [day, region, service, "aws4_request"] {
                key = SymmetricKey(data: HMAC<SHA256>.authenticationCode(for: Array(part.utf8), using: key))
            }
            return key
        }
    }
}

/// The last day's signing key: four HMACs saved per request, recomputed when the day changes.
private final class SigningKeyCache: Sendable {
    private let last = Mutex<(day: String, key: SymmetricKey)?>(nil)

    func key(day: String, derive: () -> SymmetricKey) -> SymmetricKey {
        if let cached = last.withLock({ $0 }), cached.day == day { return cached.key }
        let key = derive()
        last.withLock { $0 = (day, key) }
        return key
    }
}

/// A signing time in SigV4's two UTC forms: `20150830T123600Z` and `20150830`.
struct SigV4Time {
    let amzDate: String
    var day: String { String(amzDate.prefix(8)) }

    init(_ date: Date) {
        var calendar = Calendar(identifier: .gregorian)
        calendar.timeZone = TimeZone(identifier: "UTC")!
        let c = calendar.dateComponents([.year, .month, .day, .hour, .minute, .second], from: date)
        func two(_ v: Int?) -> String { let v = v ?? 0; return v < 10 ? "0\(v)" : "\(v)" }
        amzDate = "\(c.year ?? 1970)\(two(c.month))\(two(c.day))T\(two(c.hour))\(two(c.minute))\(two(c.second))Z"
    }
}

/// Lower-case hex for digests and signatures.
enum Hex {
    static let lowerDigits = Array("0123456789abcdef".utf8)
    static let upperDigits = Array("0123456789ABCDEF".utf8)

    /// `%XX` with upper-case digits, as SigV4 and URLs want it.
    static func appendPercentEncoded(_ byte: UInt8, to out: inout [UInt8]) {
        out += [UInt8(ascii: "%"), upperDigits[Int(byte >> 4)], upperDigits[Int(byte & 0x0F)]]
    }

    static func string<D: Sequence>(_ bytes: D) -> String where D.Element == UInt8 {
        var out = [UInt8]()
        for byte in bytes {
            out.append(lowerDigits[Int(byte >> 4)])
            out.append(lowerDigits[Int(byte & 0x0F)])
        }
        return String(decoding: out, as: UTF8.self)
    }
}
