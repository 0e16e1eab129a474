import CaptureTesting
import Foundation
import Testing

@testable import S3

@Suite struct S3XMLTests {
    static func parse(_ text: String) throws -> S3XMLElement { try S3XML.parse(Array(text.utf8)) }

    /// moto's InitiateMultipartUploadResult (namespace on the root, declaration first).
    @Test func readsChildrenByNameWhateverTheRoot() throws {
        let root = try Self.parse("""
            <?xml version="1.0" encoding="UTF-8"?>
            <InitiateMultipartUploadResult xmlns="http://s3.amazonaws.com/doc/2006-03-01/">
              <Bucket>vigil</Bucket><Key>cam/video/a.mp4</Key><UploadId>abc/def=+</UploadId>
            </InitiateMultipartUploadResult>
            """)
        #expect(root.name == "InitiateMultipartUploadResult")
        #expect(root.value("UploadId") == "abc/def=+")
        #expect(root.value("Key") == "cam/video/a.mp4")
        #expect(root.value("Missing") == nil)
    }

    /// An AWS ListObjectsV2 page: entities in keys, quoted ETags, several Contents.
    @Test func listingWithEntities() throws {
        let root = try Self.parse("""
            <ListBucketResult xmlns="http://s3.amazonaws.com/doc/2006-03-01/"><Name>vigil</Name><Prefix>c/</Prefix>\
            <KeyCount>2</KeyCount><MaxKeys>2</MaxKeys><IsTruncated>true</IsTruncated>\
            <Contents><Key>c/a&amp;b &lt;1&gt;.mp4</Key><ETag>&quot;9b2cf535f27731c974343645a3985328&quot;</ETag><Size>12</Size></Contents>\
            <Contents><Key>c/b.mp4</Key><Size>0</Size></Contents>\
            <NextContinuationToken>1ueGcxLPRx1Tr/XYExHnhbYLgveDs2J/wm36Hy4vbOwM=</NextContinuationToken></ListBucketResult>
            """)
        let contents = root.children("Contents")
        #expect(contents.map { $0.value("Key") } == ["c/a&b <1>.mp4", "c/b.mp4"])
        #expect(contents.first?.value("ETag") == "\"9b2cf535f27731c974343645a3985328\"")
        #expect(root.value("NextContinuationToken") == "1ueGcxLPRx1Tr/XYExHnhbYLgveDs2J/wm36Hy4vbOwM=")
    }

    @Test func errorBody() throws {
        let root = try Self.parse("""
            <?xml version="1.0" encoding="UTF-8"?>
            <Error><Code>SignatureDoesNotMatch</Code><Message>The request signature we calculated does not match</Message>\
            <RequestId>4442587FB7D0A2F9</RequestId></Error>
            """)
        let error = try #require(S3XML.error(root))
        #expect(error.code == "SignatureDoesNotMatch")
        #expect(error.message == "The request signature we calculated does not match")
        #expect(S3XML.error(S3XMLElement(name: "CompleteMultipartUploadResult")) == nil)
    }

    /// AWS can answer Complete with 200, whitespace while it works, then an `<Error>` body.
    @Test func completeAnsweredWithAnErrorAfterWhitespace() throws {
        let root = try Self.parse("""
            <?xml version="1.0" encoding="UTF-8"?>
            \n\n\n          <Error><Code>InternalError</Code><Message>We encountered an internal error. Please try again.</Message></Error>
            """)
        #expect(S3XML.error(root)?.code == "InternalError")
    }

    @Test func completeBodyEscapesAndCarriesChecksums() throws {
        let digest = [UInt8](repeating: 0xAB, count: 32)
        let body = S3XML.completeBody([
            S3CompletedPart(number: 1, etag: "\"e1\"", sha256: digest), S3CompletedPart(number: 2, etag: "<&>", sha256: digest),
        ])
        let root = try Self.parse(body)
        #expect(root.name == "CompleteMultipartUpload")
        let parts = root.children("Part")
        #expect(parts.map { $0.value("PartNumber") } == ["1", "2"])
        #expect(parts.map { $0.value("ETag") } == ["\"e1\"", "<&>"])
        #expect(parts.first?.value("ChecksumSHA256") == Data(digest).base64EncodedString())
        #expect(body.contains("&quot;e1&quot;") && body.contains("&lt;&amp;&gt;"))
    }

    @Test func refusesOversizedDeepAndBrokenBodies() {
        let big = [UInt8](repeating: UInt8(ascii: " "), count: S3XML.maxBodyBytes + 1)
        #expect(throws: S3XML.ParseError.self) { try S3XML.parse(big) }
        let deep = String(repeating: "<a>", count: S3XML.maxDepth + 1) + String(repeating: "</a>", count: S3XML.maxDepth + 1)
        #expect(throws: S3XML.ParseError.self) { try Self.parse(deep) }
        let shallow = String(repeating: "<a>", count: S3XML.maxDepth) + String(repeating: "</a>", count: S3XML.maxDepth)
        #expect((try? Self.parse(shallow)) != nil)
        for crashesFoundationXML in ["<?xml?><a/>", "<a><?pi?></a>", "<!DOCTYPE a [<!NOTATION n SYSTEM 'x'>]><a/>", " <?xml?><a/>"] {
            #expect(throws: S3XML.ParseError.self) { try Self.parse(crashesFoundationXML) }
        }
        #expect((try? Self.parse("\u{FEFF}<?xml version=\"1.0\" encoding=\"UTF-8\"?>\n<a><!-- c --><![CDATA[x]]></a>"))?.text == "x")
        for broken in ["", "not xml", "<a>", "<a></b>", "<a/><b/>", "<!DOCTYPE a [<!ENTITY x SYSTEM \"file:///etc/passwd\">]><a>&x;</a>"] {
            let root = try? Self.parse(broken)
            #expect(root == nil || root?.text.contains("root:") == false, "\(broken)")
        }
    }

    /// Random bytes, random tag soup and every truncation of real answers: each either parses or
    /// throws, and nothing traps (a trap ends the test process).
    @Test func hostileBodiesNeverTrap() {
        var random = SeededRandom.fromEnvironment("VIGIL_S3XML_SEED", label: "S3XMLTests")
        let samples = [
            #"<?xml version="1.0"?><ListPartsResult><Part><PartNumber>1</PartNumber><ETag>"x"</ETag><Size>5242880</Size></Part><IsTruncated>false</IsTruncated></ListPartsResult>"#,
            #"<Error><Code>NoSuchUpload</Code><Message>The specified upload does not exist &amp; more</Message></Error>"#,
            #"<ListMultipartUploadsResult><Upload><Key>a/b</Key><UploadId>id</UploadId></Upload><![CDATA[x<y]]></ListMultipartUploadsResult>"#,
        ]
        var parsed = 0
        for sample in samples {
            let bytes = Array(sample.utf8)
            for cut in 0...bytes.count where (try? S3XML.parse(Array(bytes[..<cut]))) != nil { parsed += 1 }
        }
        #expect(parsed >= samples.count, "every full sample parses")
        // Constructs that crash FoundationXML on Linux (S3XML.unsafeConstruct) are among the pieces.
        let pieces = [
            "<a>", "</a>", "<b x='1'>", "</b>", "&amp;", "&bogus;", "<![CDATA[", "]]>", "<?xml?>", "<?xml version='1.0'?>", "<?pi?>",
            "<!--", "-->", "<!DOCTYPE a [", "<!NOTATION n SYSTEM 'x'>", "<!ENTITY e SYSTEM 'x' NDATA n>", "]>", "text", "\u{0}", "é",
            "<a:b xmlns:a='u'>", "</a:b>", "<:a/>",
        ]
        let markup = Array("<>/=:'\"&;#!?[]-ab1xé中 \n")
        let rounds = ProcessInfo.processInfo.environment["VIGIL_S3XML_ROUNDS"].flatMap { Int($0) } ?? 3000
        for _ in 0..<rounds {
            var bytes: [UInt8]
            switch Int.random(in: 0..<3, using: &random) {
            case 0:
                bytes = (0..<Int.random(in: 0..<200, using: &random)).map { _ in UInt8.random(in: 0...255, using: &random) }
            case 1:
                // Valid UTF-8 made of markup characters: gets past the byte checks into the parser.
                bytes = Array(String((0..<Int.random(in: 0..<120, using: &random)).map { _ in markup.randomElement(using: &random)! }).utf8)
            default:
                bytes = Array((0..<Int.random(in: 0..<40, using: &random)).map { _ in pieces.randomElement(using: &random)! }.joined().utf8)
            }
            _ = try? S3XML.parse(bytes)
        }
    }
}

@Suite struct S3FailureReasonTests {
    static let answers: [(status: Int, code: String?, reason: S3FailureReason)] = [
        (403, "InvalidAccessKeyId", .auth), (403, "SignatureDoesNotMatch", .auth), (403, "AccessDenied", .auth),
        (400, "AuthorizationHeaderMalformed", .auth), (403, "RequestTimeTooSkewed", .clock), (404, "NoSuchBucket", .config),
        (301, "PermanentRedirect", .config), (301, nil, .config), (400, "BadDigest", .checksum),
        (400, "XAmzContentSHA256Mismatch", .checksum), (503, "SlowDown", .throttled), (503, nil, .throttled), (429, nil, .throttled),
        (500, "InternalError", .server), (500, nil, .server), (502, nil, .server), (504, nil, .server), (403, nil, .auth),
        (400, "RequestTimeout", .timeout), (404, "NoSuchUpload", .config),
    ]

    @Test(arguments: answers)
    func mapsAnswersToReasons(status: Int, code: String?, reason: S3FailureReason) {
        #expect(S3Error.reason(status: status, code: code) == reason)
    }

    @Test func descriptionIsOneLine() {
        let error = S3Error(
            reason: .auth, status: 403, code: "SignatureDoesNotMatch", message: "The signature does not match", request: "PUT vigil/cam/a.mp4")
        #expect(error.description == "S3 PUT vigil/cam/a.mp4: 403 SignatureDoesNotMatch: The signature does not match")
        #expect(S3Error(reason: .network, message: "connection refused", request: "GET vigil").description
            == "S3 GET vigil: connection refused")
    }
}
