import Foundation
import Testing

@testable import S3

/// SigV4 against published vectors. The signatures below are the vectors' own files; plan29 §1
/// re-computed each on this machine with an independent Python HMAC script.
@Suite struct SigV4Tests {
    // MARK: aws-c-auth (awslabs/aws-c-auth, tests/aws-signing-test-suite/v4/<name>/)
    // All use AKIDEXAMPLE, region us-east-1, service "service", 2015-08-30T12:36:00Z, host
    // example.amazonaws.com. Only vectors whose meaning is the same for S3 (no path that
    // normalization or double encoding would change) are used.

    static let vectorDate = Date(timeIntervalSince1970: 1_440_938_160)  // 2015-08-30T12:36:00Z
    static let vectorSigner = SigV4Signer(
        accessKeyID: "AKIDEXAMPLE", secretAccessKey: "wJalrXUtnFEMI/K7MDENG+bPxRfiCYEXAMPLEKEY", sessionToken: nil,
        region: "us-east-1", service: "service")

    static func vectorRequest(
        _ method: String = "GET", path: String, query: [(name: String, value: String)] = [],
        headers: [(name: String, value: String)] = [], payloadHash: String = SigV4Signer.emptyPayloadHash
    ) -> SigV4Request {
        SigV4Request(
            method: method, encodedPath: SigV4Signer.uriEncode(path, keepSlash: true), query: query,
            headers: [("Host", "example.amazonaws.com")] + headers, payloadHash: payloadHash)
    }

    static func signature(of headers: [(name: String, value: String)]) -> String? {
        guard let authorization = headers.first(where: { $0.name == "Authorization" })?.value,
              let range = authorization.range(of: "Signature=") else { return nil }
        return String(authorization[range.upperBound...])
    }

    /// v4/get-vanilla: header-canonical-request.txt, header-string-to-sign.txt, header-signature.txt
    /// and header-signed-request.txt's Authorization line.
    @Test func getVanillaEveryStep() {
        let signer = Self.vectorSigner
        let dated = signer.withDateHeaders(Self.vectorRequest(path: "/"), date: Self.vectorDate)
        let canonical = SigV4Signer.canonicalRequest(dated)
        #expect(canonical.text == """
            GET
            /

            host:example.amazonaws.com
            x-amz-date:20150830T123600Z

            host;x-amz-date
            e3b0c44298fc1c149afbf4c8996fb92427ae41e4649b934ca495991b7852b855
            """)
        let stringToSign = signer.stringToSign(canonicalRequest: canonical.text, date: Self.vectorDate)
        #expect(stringToSign == """
            AWS4-HMAC-SHA256
            20150830T123600Z
            20150830/us-east-1/service/aws4_request
            bb579772317eb040ac9ed261061d46c1f17a8133879d6129b6e1c25292927e63
            """)
        #expect(signer.signature(stringToSign: stringToSign, date: Self.vectorDate)
            == "5fa00fa31553b73ebf1942676e86291e8372ff2a2260956d9b8aae1d763fbf31")
        let headers = signer.signedHeaders(Self.vectorRequest(path: "/"), date: Self.vectorDate)
        #expect(headers.first { $0.name == "Authorization" }?.value
            == "AWS4-HMAC-SHA256 Credential=AKIDEXAMPLE/20150830/us-east-1/service/aws4_request, SignedHeaders=host;x-amz-date, Signature=5fa00fa31553b73ebf1942676e86291e8372ff2a2260956d9b8aae1d763fbf31")
        #expect(headers.first { $0.name == "X-Amz-Date" }?.value == "20150830T123600Z")
    }

    /// v4/get-vanilla: query-canonical-request.txt and query-signature.txt (these hash the empty
    /// payload, not UNSIGNED-PAYLOAD, hence the parameter).
    @Test func getVanillaPresigned() {
        let query = Self.vectorSigner.presignedQuery(
            method: "GET", encodedPath: "/", host: "example.amazonaws.com", expires: 3600,
            payloadHash: SigV4Signer.emptyPayloadHash, date: Self.vectorDate)
        #expect(query == "X-Amz-Algorithm=AWS4-HMAC-SHA256&X-Amz-Credential=AKIDEXAMPLE%2F20150830%2Fus-east-1%2Fservice%2Faws4_request"
            + "&X-Amz-Date=20150830T123600Z&X-Amz-Expires=3600&X-Amz-SignedHeaders=host"
            + "&X-Amz-Signature=e93c787ed7f371d5c6b165c1b38ede9550f4dce4144713e844b25b7192d3865d")
    }

    /// The other aws-c-auth vectors (header-signature.txt of each folder).
    @Test(arguments: [
        // v4/get-vanilla-query-order-key-case: /?Param2=value2&Param1=value1, sorted by name.
        ("get-vanilla-query-order-key-case", SigV4Tests.vectorRequest(path: "/", query: [("Param2", "value2"), ("Param1", "value1")]),
         "b97d918cfa904a5beff61c982a1b6f458b799221646efd99d3219ec94cdf2500"),
        // v4/get-unreserved: the unreserved set is never encoded.
        ("get-unreserved", SigV4Tests.vectorRequest(path: "/-._~0123456789ABCDEFGHIJKLMNOPQRSTUVWXYZabcdefghijklmnopqrstuvwxyz"),
         "07ef7494c76fa4850883e2b006601f940f8a34d404d0cfa977f52a65bbf5f24f"),
        // v4/get-utf8: /ሴ is sent as /%E1%88%B4.
        ("get-utf8", SigV4Tests.vectorRequest(path: "/ሴ"), "8318018e0b0f223aa2bbf98705b62bb787dc9c0e678f255a891fd03141be5d85"),
        // v4/get-space-unnormalized: a space is %20.
        ("get-space-unnormalized", SigV4Tests.vectorRequest(path: "/example space/"),
         "652487583200325589f1fba4c7e578f72c47cb61beeca81406b39ddec1366741"),
        // v4/get-slashes-unnormalized: // stays, as S3 wants.
        ("get-slashes-unnormalized", SigV4Tests.vectorRequest(path: "//example//"),
         "87cca117541a147f6df867677d98a7d80dff226d2bfca9e4ffa899665623c7e5"),
        // v4/post-x-www-form-urlencoded with sign_body: the body's hash as x-amz-content-sha256.
        ("post-x-www-form-urlencoded", SigV4Tests.vectorRequest(
            "POST", path: "/",
            headers: [("Content-Type", "application/x-www-form-urlencoded"), ("Content-Length", "13"),
                      ("x-amz-content-sha256", "9095672bbd1f56dfc5b65f3e153adc8731a4a654192329106275f4c7b24d0b6e")],
            payloadHash: "9095672bbd1f56dfc5b65f3e153adc8731a4a654192329106275f4c7b24d0b6e"),
         "d3875051da38690788ef43de4db0d8f280229d82040bfac253562e56c3f20e0b"),
    ])
    func awsCAuthVector(name: String, request: SigV4Request, expected: String) {
        #expect(Self.signature(of: Self.vectorSigner.signedHeaders(request, date: Self.vectorDate)) == expected, "\(name)")
    }

    /// v4/get-vanilla-with-session-token: the token is sent and signed as x-amz-security-token.
    @Test func sessionTokenIsSigned() {
        let signer = SigV4Signer(
            accessKeyID: "AKIDEXAMPLE", secretAccessKey: "wJalrXUtnFEMI/K7MDENG+bPxRfiCYEXAMPLEKEY",
            sessionToken: "6e86291e8372ff2a2260956d9b8aae1d763fbf315fa00fa31553b73ebf194267", region: "us-east-1", service: "service")
        let headers = signer.signedHeaders(Self.vectorRequest(path: "/"), date: Self.vectorDate)
        #expect(Self.signature(of: headers) == "07ec1639c89043aa0e3e2de82b96708f198cceab042d4a97044c66dd9f74e7f8")
        #expect(headers.contains { $0.name == "X-Amz-Security-Token" && $0.value.hasPrefix("6e86291e") })
        #expect(headers.first { $0.name == "Authorization" }?.value.contains("SignedHeaders=host;x-amz-date;x-amz-security-token") == true)
    }

    // MARK: S3's documented examples (AWS S3 API reference, "sig-v4-header-based-auth" and
    // "sigv4-query-string-auth"): AKIAIOSFODNN7EXAMPLE, us-east-1, s3, 20130524T000000Z,
    // virtual-hosted examplebucket.s3.amazonaws.com.

    static let s3Date = Date(timeIntervalSince1970: 1_369_353_600)  // 2013-05-24T00:00:00Z
    static let s3Keys = S3Keys(accessKeyID: "AKIAIOSFODNN7EXAMPLE", secretAccessKey: "wJalrXUtnFEMI/K7MDENG/bPxRfiCYEXAMPLEKEY", sessionToken: nil)
    static let s3Signer = SigV4Signer(
        accessKeyID: s3Keys.accessKeyID, secretAccessKey: s3Keys.secretAccessKey, sessionToken: nil, region: "us-east-1", service: "s3")
    static let s3Endpoint = S3Endpoint(
        scheme: "https", host: "s3.amazonaws.com", port: 443, bucket: "examplebucket", region: "us-east-1", pathStyle: false)

    static func s3Request(
        _ method: String, key: String?, query: [(name: String, value: String)] = [], headers: [(name: String, value: String)] = [],
        payloadHash: String = SigV4Signer.emptyPayloadHash
    ) -> SigV4Request {
        SigV4Request(
            method: method, encodedPath: s3Endpoint.encodedPath(key: key), query: query,
            headers: [("Host", s3Endpoint.hostHeader), ("x-amz-content-sha256", payloadHash)] + headers, payloadHash: payloadHash)
    }

    /// GET Object with a range: every step, down to the canonical request's hash.
    @Test func s3GetObjectWithRange() {
        let request = Self.s3Request("GET", key: "test.txt", headers: [("Range", "bytes=0-9")])
        let canonical = SigV4Signer.canonicalRequest(Self.s3Signer.withDateHeaders(request, date: Self.s3Date))
        #expect(canonical.signedHeaders == "host;range;x-amz-content-sha256;x-amz-date")
        let stringToSign = Self.s3Signer.stringToSign(canonicalRequest: canonical.text, date: Self.s3Date)
        #expect(stringToSign.hasSuffix("\n20130524/us-east-1/s3/aws4_request\n7344ae5b7ee6c3e7e6b0fe0640412a37625d1fbfff95c48bbb2dc43964946972"))
        #expect(Self.signature(of: Self.s3Signer.signedHeaders(request, date: Self.s3Date))
            == "f0e8bdb87c964420e857bd35b5d6ed310bd44f0170aba48dd91039c6036bdb41")
    }

    /// PUT Object of key `test$file.text`: the key is encoded once (`%24`), the body hash signed.
    @Test func s3PutObject() {
        #expect(Self.s3Endpoint.encodedPath(key: "test$file.text") == "/test%24file.text")
        let request = Self.s3Request(
            "PUT", key: "test$file.text",
            headers: [("Date", "Fri, 24 May 2013 00:00:00 GMT"), ("x-amz-storage-class", "REDUCED_REDUNDANCY")],
            payloadHash: "44ce7dd67c959e0d3524ffac1771dfbba87d2b6b4b4e99e42034a8b803f8b072")
        let headers = Self.s3Signer.signedHeaders(request, date: Self.s3Date)
        #expect(Self.signature(of: headers) == "98ad721746da40c64f1a55b78f14c238d841ea1380cd77a1b5971af0ece108bd")
        #expect(headers.first { $0.name == "Authorization" }?.value
            .contains("SignedHeaders=date;host;x-amz-content-sha256;x-amz-date;x-amz-storage-class") == true)
    }

    /// GET Bucket lifecycle: a name without a value is `lifecycle=`.
    @Test func s3GetBucketLifecycle() {
        let request = Self.s3Request("GET", key: nil, query: [("lifecycle", "")])
        #expect(request.encodedPath == "/")
        #expect(Self.signature(of: Self.s3Signer.signedHeaders(request, date: Self.s3Date))
            == "fea454ca298b7da1c68078a5d1bdbfbbe0d65c699e0f91ac7a200a0136783543")
    }

    /// GET Bucket (list objects) with `max-keys=2&prefix=J`.
    @Test func s3ListObjects() {
        let request = Self.s3Request("GET", key: nil, query: [("prefix", "J"), ("max-keys", "2")])
        #expect(Self.signature(of: Self.s3Signer.signedHeaders(request, date: Self.s3Date))
            == "34b48302e7b5fa45bde8084f4b7868a86f0a534bc59db6670ed5711ef69dc6f7")
    }

    /// The presigned GET example, whole URL, made by the client itself (UNSIGNED-PAYLOAD).
    @Test func s3PresignedGetURL() async throws {
        let client = S3Client(endpoint: Self.s3Endpoint, keys: Self.s3Keys)
        let url = client.presignedGetURL(key: "test.txt", expires: 86400, now: Self.s3Date)
        try await client.shutdown()
        #expect(url == "https://examplebucket.s3.amazonaws.com/test.txt?X-Amz-Algorithm=AWS4-HMAC-SHA256"
            + "&X-Amz-Credential=AKIAIOSFODNN7EXAMPLE%2F20130524%2Fus-east-1%2Fs3%2Faws4_request&X-Amz-Date=20130524T000000Z"
            + "&X-Amz-Expires=86400&X-Amz-SignedHeaders=host"
            + "&X-Amz-Signature=aeeed9bbccd4d02ee5c0109b86d86835f995330da4c265957d157751f604d404")
    }

    // MARK: Canonical forms the S3 calls rely on

    @Test func canonicalQueryOfS3Calls() {
        #expect(SigV4Signer.canonicalQuery([("uploads", "")]) == "uploads=")
        #expect(SigV4Signer.canonicalQuery([("uploadId", "a/b+c=="), ("partNumber", "2")]) == "partNumber=2&uploadId=a%2Fb%2Bc%3D%3D")
        // A continuation token with `/`, `=`, `+` and a space: encoded, never `+` for a space.
        #expect(SigV4Signer.canonicalQuery([("continuation-token", "1/2=3+4 5"), ("list-type", "2"), ("prefix", "cam/")])
            == "continuation-token=1%2F2%3D3%2B4%205&list-type=2&prefix=cam%2F")
        // Same name twice: sorted by value.
        #expect(SigV4Signer.canonicalQuery([("a", "2"), ("a", "1")]) == "a=1&a=2")
    }

    @Test func keysAreEncodedPerSegment() {
        let pathStyle = S3Endpoint(scheme: "http", host: "127.0.0.1", port: 9000, bucket: "vigil", region: "us-east-1", pathStyle: true)
        #expect(pathStyle.encodedPath(key: "cam 1/video/2026-11-27/a+b.mp4") == "/vigil/cam%201/video/2026-11-27/a%2Bb.mp4")
        #expect(pathStyle.encodedPath(key: nil) == "/vigil")
        #expect(pathStyle.hostHeader == "127.0.0.1:9000")
        #expect(Self.s3Endpoint.hostHeader == "examplebucket.s3.amazonaws.com")
    }

    @Test func headerValuesAreTrimmedAndCollapsed() {
        #expect(SigV4Signer.canonicalHeaderValue("  a   b  c ") == "a b c")
    }

    @Test func keysNeverPrintTheSecret() {
        let keys = S3Keys(accessKeyID: "AKID", secretAccessKey: "very-secret", sessionToken: "token-value")
        for text in [keys.description, keys.debugDescription, String(describing: keys), String(reflecting: keys), "\(keys)"] {
            #expect(!text.contains("very-secret") && !text.contains("token-value"), "\(text)")
            #expect(text.contains("AKID"))
        }
    }
}
