import CheckedMath
import RTSP
import Testing

/// What misbehaving cameras were seen to send, each of which stopped the whole recorder before
/// the RTSP library checked it (an arithmetic trap, or memory and CPU without bound). Each is
/// refused with a `RTSPViolation` that names it, or clamped to a value a camera can have.
@Suite struct HostileInputTests {
    private func parse(_ text: String) throws(RTSPViolation) -> (response: RTSPResponse, length: Int)? {
        let bytes = Array(text.utf8)
        do {
            return try bytes.withUnsafeBytes { try RTSPResponse.parse($0) }
        } catch let violation as RTSPViolation {
            throw violation
        } catch {
            preconditionFailure("RTSPResponse.parse throws only RTSPViolation")
        }
    }

    @Test(arguments: ["9223372036854775807", "99999999999999999999999", "65537"])
    func aHugeContentLengthIsRefusedNotAdded(_ length: String) {
        #expect(throws: RTSPViolation.self) { try parse("RTSP/1.0 200 OK\r\nCSeq: 1\r\nContent-Length: \(length)\r\n\r\nv=0") }
        let error = try? #require(throws: RTSPViolation.self) { try parse("RTSP/1.0 200 OK\r\nContent-Length: \(length)\r\n\r\n") }
        #expect(error?.description.contains("Content-Length") == true)
    }

    @Test func twoDifferentContentLengthsAreRefused() throws {
        #expect(throws: RTSPViolation.badContentLength(CameraText.quoted("3, 5"))) {
            try parse("RTSP/1.0 200 OK\r\nContent-Length: 5\r\nContent-Length: 3\r\n\r\nabcde")
        }
        #expect(try parse("RTSP/1.0 200 OK\r\nContent-Length: 3\r\ncontent-length: 3\r\n\r\nabc")?.response.body == "abc")
    }

    @Test(arguments: ["-1", "12abc", "", "0x10", "+5"])
    func aContentLengthThatIsNotALengthIsRefused(_ length: String) {
        #expect(throws: RTSPViolation.badContentLength(CameraText.quoted(length))) {
            try parse("RTSP/1.0 200 OK\r\nContent-Length: \(length)\r\n\r\n")
        }
    }

    /// 250 KB without a newline used to be scanned again on every receive (4.5 s of CPU): it is
    /// refused after one line's limit, however much more is sent.
    @Test func aHeaderWithoutEndIsRefusedAtTheLineLimit() throws {
        let endless = "RTSP/1.0 200 OK\r\nX-Pad: " + String(repeating: "a", count: 250_000)
        #expect(throws: RTSPViolation.headerLineTooLong(limit: RTSPLimits.headerLineBytes, start: CameraText.quoted("X-Pad: " + String(repeating: "a", count: 33)))) {
            try parse(endless)
        }
        let manyLines = "RTSP/1.0 200 OK\r\n" + String(repeating: "X-Pad: a\r\n", count: 10_000)
        #expect(throws: RTSPViolation.headerTooLarge(limit: RTSPLimits.headerBytes)) { try parse(manyLines) }
        // Under the limits, an incomplete head is only incomplete.
        #expect(try parse("RTSP/1.0 200 OK\r\nX-Pad: aaaa") == nil)
    }

    @Test(arguments: ["RTSP/1.0 2000 OK", "RTSP/1.0 abc OK", "RTSP/1.0", "HTTP/1.1 200 OK", "HELLO", "RTSP/9.9 200 OK", "RTSP/1.0 -20 OK"])
    func aMalformedStatusLineIsRefused(_ line: String) {
        #expect(throws: RTSPViolation.badStatusLine(CameraText.quoted(line))) { try parse(line + "\r\nCSeq: 1\r\n\r\n") }
    }

    @Test func aServersOwnRequestParsesAsStatusZero() throws {
        let request = try #require(try parse("OPTIONS * RTSP/1.0\r\nCSeq: 7\r\n\r\n"))
        #expect(request.response.status == 0)
    }

    @Test func aHugeSessionTimeoutIsClampedAndKeepAlivesStayFrequent() throws {
        let huge = try SessionHeader("1;timeout=99999999999")
        #expect(huge.id == "1" && huge.timeoutSeconds == RTSPLimits.sessionTimeoutSeconds && huge.keepaliveSeconds == 30)
        #expect(huge.problem?.contains("timeout") == true)
        #expect(try SessionHeader("1;timeout=60").problem == nil)
        let beyondInt64 = try SessionHeader("ABCD; timeout=999999999999999999999999999")
        #expect(beyondInt64.timeoutSeconds == RTSPLimits.sessionTimeoutSeconds)
        #expect(try SessionHeader("s;timeout=0").keepaliveSeconds == 2)
        #expect(try SessionHeader("s;timeout=-5").timeoutSeconds == nil, "not a number: the default")
        #expect(try SessionHeader("s").keepaliveSeconds == 30)
        #expect(throws: RTSPViolation.self) { try SessionHeader(";timeout=60") }
        #expect(throws: RTSPViolation.self) { try SessionHeader("a\u{1}b") }
        #expect(throws: RTSPViolation.self) { try SessionHeader(String(repeating: "x", count: 300)) }
    }

    @Test func aSetupAnswerWithoutInterleavedChannelsIsRefused() throws {
        #expect(try interleavedChannel(transport: "RTP/AVP/TCP;unicast;interleaved=2-3;ssrc=1234") == 2)
        #expect(try interleavedChannel(transport: "RTP/AVP;unicast;interleaved=0-1") == 0)
        #expect(try interleavedChannel(transport: nil) == 0)
        #expect(throws: RTSPViolation.self) { try interleavedChannel(transport: "RTP/AVP;unicast;client_port=5000-5001;server_port=6970-6971") }
        #expect(throws: RTSPViolation.self) { try interleavedChannel(transport: "RTP/AVP/TCP;interleaved=999-1000") }
    }

    /// `a=framerate:0` and `5e-324` made 90000 ÷ rate infinite, and its conversion trapped.
    @Test(arguments: ["0", "5e-324", "-25", "nan", "inf", "1e309", "abc", "100000"])
    func aFrameRateNoCameraHasIsIgnoredAndNamed(_ rate: String) throws {
        let sdp = "v=0\r\nm=video 0 RTP/AVP 96\r\na=rtpmap:96 H264/90000\r\na=framerate:\(rate)\r\n"
        let description = SessionDescription(sdp)
        let video = try #require(description.video)
        #expect(video.frameRate == nil)
        #expect(description.problems.count == 1 && description.problems[0].contains("frame rate"))
    }

    @Test func anSDPsParameterSetsComeInTheOrderDecodersNeed() throws {
        // A Dahua H.265 camera lists SPS, PPS, VPS; the decoder needs VPS, SPS, PPS.
        let sdp = "v=0\r\nm=video 0 RTP/AVP 98\r\na=rtpmap:98 H265/90000\r\na=fmtp:98 sprop-sps=QgE=;sprop-pps=RAE=;sprop-vps=QAE=\r\n"
        let video = try #require(SessionDescription(sdp).video)
        #expect(video.parameterSets == [0, 0, 0, 1, 0x40, 1, 0, 0, 0, 1, 0x42, 1, 0, 0, 0, 1, 0x44, 1])
        let bad = SessionDescription("v=0\r\nm=video 0 RTP/AVP 96\r\na=rtpmap:96 H264/90000\r\na=fmtp:96 sprop-parameter-sets=!!!,aM48gA==\r\n")
        #expect(bad.video?.parameterSets == [0, 0, 0, 1, 0x68, 0xCE, 0x3C, 0x80])
        #expect(bad.problems.first?.contains("base64") == true)
        let empty = SessionDescription("v=0\r\nm=video 0 RTP/AVP 96\r\na=rtpmap:96 H264/90000\r\na=fmtp:96 packetization-mode=1;sprop-parameter-sets=\r\n")
        #expect(empty.video?.parameterSets.isEmpty == true && empty.problems.first?.contains("parameter set") == true)
        let commas = SessionDescription("v=0\r\nm=video 0 RTP/AVP 96\r\na=rtpmap:96 H264/90000\r\na=fmtp:96 sprop-parameter-sets=,\r\n")
        #expect(commas.problems.first?.contains("parameter set") == true)
        let huge = "v=0\r\nm=video 0 RTP/AVP 96\r\na=fmtp:96 sprop-parameter-sets=" + String(repeating: "QUFB", count: 10_000) + "\r\n"
        #expect(SessionDescription(huge).video?.parameterSets.isEmpty == true)
    }

    @Test func base64AndMD5AreThoseOfTheirRFCs() {
        #expect(MD5.hex("") == "d41d8cd98f00b204e9800998ecf8427e")
        #expect(MD5.hex("abc") == "900150983cd24fb0d6963f7d28e17f72")
        #expect(MD5.hex("message digest") == "f96b697d7cb7938d525a2f31aaf161d0")
        #expect(MD5.hex(String(repeating: "1234567890", count: 8)) == "57edf4a22be3c955ac49da2e2107b67a")
        #expect(Base64.encode(Array("foobar".utf8)) == "Zm9vYmFy" && Base64.encode(Array("fo".utf8)) == "Zm8=")
        #expect(Base64.decode("Zm9vYg==") == Array("foob".utf8) && Base64.decode("Zm9vYg") == Array("foob".utf8))
        #expect(Base64.decode("Zm9v!") == nil && Base64.decode("Zm==9v") == nil && Base64.decode("Z") == nil)
    }

    /// After one keyframe, timestamps stepping back by 0x7FFFFFFF, or 44,000 pictures each
    /// +0x7FFFFFFF: the extended times stay within ±2^62 (so later sums and unit changes fit).
    @Test func timestampsSteppingByHalfTheirRangeStayBounded() {
        var forwards = RTPTimestampUnwrapper()
        var raw: UInt32 = 1000
        for _ in 0..<44_000 {
            let t = forwards.extend(raw)
            #expect(t.magnitude <= UInt64(RTPTimestampUnwrapper.bound))
            raw &+= 0x7FFF_FFFF
        }
        var backwards = RTPTimestampUnwrapper()
        raw = 1000
        for _ in 0..<44_000 {
            #expect(backwards.extend(raw).magnitude <= UInt64(RTPTimestampUnwrapper.bound))
            raw &-= 0x7FFF_FFFF
        }
        // The extremes the unwrapper can give, in any order, with the largest step a camera's
        // SDP or timestamps can claim: decode times are computed without a trap.
        let bound = RTPTimestampUnwrapper.bound
        var timeline = DecodeTimeline(depth: 15, frameTicks: .max)
        for t in [bound, 0, -bound, bound] { #expect(timeline.decodeTime(presentedAt: t) <= t) }
        #expect(DecodeTimeline.frameTicks(of: [-bound, bound]) == 2 * bound)
    }

    @Test func interleavedFramingSkipsJunkAndWaitsForWholePackets() throws {
        let stream: [UInt8] = [0xFF, 0x00, 0x24, 0, 0, 3, 1, 2] + [3]
        try stream.withUnsafeBytes { bytes in
            guard case .junk(2) = try InterleavedFraming.next(bytes) else { Issue.record("junk first"); return }
            guard case .packet(0, 6..<9, 7) = try InterleavedFraming.next(bytes, at: 2) else { Issue.record("then the packet"); return }
            guard case .needMore = try InterleavedFraming.next(UnsafeRawBufferPointer(rebasing: bytes[..<8]), at: 2) else { Issue.record("a partial packet"); return }
        }
    }

    @Test func aFloodOfPicturesIsRefused() {
        var limit = PictureRateLimit()
        let start: Int64 = 5_000_000_000
        let admitted = (0..<2000).filter { limit.admit(atNanos: start + Int64($0) * 100_000) }.count
        #expect(admitted == RTSPLimits.picturesPerSecond)
        var steady = PictureRateLimit()
        #expect((0..<3000).allSatisfy { steady.admit(atNanos: start + Int64($0) * 33_333_333) }, "30 fps for 100 s")
    }

    @Test func checkedArithmeticReturnsNilWhereSwiftWouldTrap() {
        #expect(Int64(checked: 1e300) == nil && Int64(checked: .nan) == nil && Int64(checked: -.infinity) == nil)
        #expect(Int64(checked: 9_223_372_036_854_775_808.0) == nil && Int64(checked: -9_223_372_036_854_775_808.0) == .min)
        #expect(Int64(checked: 2.9) == 2)
        #expect(Int64.max.scaled(by: 2, over: 2) == .max, "no intermediate overflow")
        #expect(Int64.max.scaled(by: 3, over: 2) == nil && Int64(5).scaled(by: 1, over: 0) == nil)
        #expect(Nanoseconds.from(ticks: 90_000, clockRate: 90_000) == 1_000_000_000)
        #expect(Nanoseconds.from(ticks: 1 << 62, clockRate: 90_000) == nil)
        #expect(Nanoseconds.from(seconds: 99_999_999_999.0) == nil && Nanoseconds.from(seconds: 1.5) == 1_500_000_000)
        #expect(Int64.max.adding(1) == nil && Int64.min.subtracting(1) == nil)
    }
}
