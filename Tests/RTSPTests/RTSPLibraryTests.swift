import RTSP
import Testing

/// Vigil's RTSP library on what well-behaved cameras send: addresses, answers, authentication,
/// SDP, RTP depacketizing and decode times. What misbehaving ones send is in
/// `HostileInputTests`; the client against a real server in `NetworkCameraTests`.
@Suite struct RTSPLibraryTests {
    @Test func addressesAreTakenApartWithTheirCredentialsDecodedAndLeftOutOfRequests() throws {
        let a = try #require(RTSPAddress("rtsp://us%40er:p%3Ass%2F1@[::1]:8554/live/ch1?subtype=0#x"))
        #expect(a.host == "::1" && a.port == 8554)
        #expect(a.user == "us@er" && a.password == "p:ss/1")
        #expect(a.requestURL == "rtsp://[::1]:8554/live/ch1?subtype=0")
        let b = try #require(RTSPAddress("RTSP://admin@192.168.1.20"))
        #expect(b.port == 554 && b.user == "admin" && b.password == nil && b.requestURL == "rtsp://192.168.1.20/")
        #expect(RTSPAddress("http://host/video.mjpg") == nil)
        #expect(RTSPAddress("rtsp://host:99999/x") == nil)
        #expect(RTSPAddress.resolve("trackID=1", against: "rtsp://h/s/") == "rtsp://h/s/trackID=1")
        #expect(RTSPAddress.resolve("trackID=1", against: "rtsp://h/s") == "rtsp://h/s/trackID=1")
        #expect(RTSPAddress.resolve("/other/track", against: "rtsp://h:10/s/") == "rtsp://h:10/other/track")
        #expect(RTSPAddress.resolve("rtsp://x/y", against: "rtsp://h/s/") == "rtsp://x/y")
        #expect(RTSPAddress.resolve("*", against: "rtsp://h/s/") == "rtsp://h/s/")
        // A Content-Base without its scheme (some Dahua and Foscam firmware): the request's
        // scheme, host and port with the path it gives.
        #expect(RTSPAddress.resolve("192.168.1.5:554/stream0/", against: "rtsp://10.0.0.9:8554/stream0") == "rtsp://10.0.0.9:8554/stream0/")
        #expect(RTSPAddress.resolve("192.168.1.5/live/", against: "rtsp://cam:554/live") == "rtsp://cam:554/live/")
        #expect(RTSPAddress.resolve("stream.sdp/trackID=0", against: "rtsp://h/live/") == "rtsp://h/live/stream.sdp/trackID=0")
        #expect(RTSPAddress.resolve("trackID=1", against: RTSPAddress.resolve("192.168.1.5:554/stream0/", against: "rtsp://h:554/stream0"))
            == "rtsp://h:554/stream0/trackID=1")
        // A control that only looks like one (a dot or colon after an `=`) stays relative.
        #expect(RTSPAddress.resolve("track=1.0", against: "rtsp://h/s/") == "rtsp://h/s/track=1.0")
        #expect(RTSPAddress.resolve("rtsps://x/y", against: "rtsp://h/s/") == "rtsps://x/y")
    }

    @Test func anAnswerIsParsedOnlyOnceItArrivedWhole() throws {
        let text = "RTSP/1.0 401 Unauthorized\r\nCSeq: 2\r\nWWW-Authenticate: Basic realm=\"cam\"\r\nContent-Length: 5\r\n\r\nhello$\u{0}\u{0}\u{4}"
        let bytes = Array(text.utf8)
        try bytes.withUnsafeBytes { all in
            #expect(try RTSPResponse.parse(UnsafeRawBufferPointer(rebasing: all[..<40])) == nil)
            #expect(try RTSPResponse.parse(UnsafeRawBufferPointer(rebasing: all[..<(all.count - 6)])) == nil, "the body is not whole yet")
            let (response, length) = try #require(try RTSPResponse.parse(all))
            #expect(response.status == 401 && response.reason == "Unauthorized")
            #expect(response.header("www-authenticate") == "Basic realm=\"cam\"")
            #expect(response.body == "hello")
            #expect(length == all.count - 4, "the interleaved packet after it is not part of it")
        }
    }

    /// Expected values computed independently (Python's hashlib and base64).
    @Test func basicAndDigestAnswersAreThoseTheRFCsDefine() throws {
        var basic = try #require(RTSPAuthorization(challenges: ["Basic realm=\"cam\""], user: "viewer", password: "right-secret"))
        #expect(basic.value(method: "DESCRIBE", url: "rtsp://h/") == "Basic dmlld2VyOnJpZ2h0LXNlY3JldA==")

        // Offered both, Digest is chosen: it does not send the password.
        var digest = try #require(RTSPAuthorization(
            challenges: ["Basic realm=\"cam realm\"", "Digest realm=\"cam realm\", nonce=\"abc123nonce\", stale=\"FALSE\""],
            user: "viewer", password: "s3cret pass"))
        let value = digest.value(method: "DESCRIBE", url: "rtsp://10.0.0.5:554/stream1")
        #expect(value.hasPrefix("Digest username=\"viewer\", realm=\"cam realm\", nonce=\"abc123nonce\", uri=\"rtsp://10.0.0.5:554/stream1\""))
        #expect(value.contains("response=\"7e503107b613e3016ba140e5a880ba9a\""), "\(value)")

        // RFC 2617's own example (qop=auth): the response depends on the client's nonce, so it is
        // checked against the formula with MD5 verified above.
        var rfc = try #require(RTSPAuthorization(
            challenges: ["Digest realm=\"testrealm@host.com\", qop=\"auth,auth-int\", nonce=\"dcd98b7102dd2f0e8b11d0f600bfb0c093\", opaque=\"5ccc069c403ebaf9f0171e9517f40e41\""],
            user: "Mufasa", password: "Circle Of Life"))
        let answer = rfc.value(method: "GET", url: "/dir/index.html")
        let fields = RTSPAuthorization.parameters(answer.dropFirst(7)[...])
        let cnonce = try #require(fields["cnonce"])
        #expect(fields["nc"] == "00000001" && fields["qop"] == "auth" && fields["opaque"] == "5ccc069c403ebaf9f0171e9517f40e41")
        let ha1 = MD5.hex("Mufasa:testrealm@host.com:Circle Of Life")
        #expect(ha1 == "939e7578ed9e3c518a452acee763bce9")
        let ha2 = MD5.hex("GET:/dir/index.html")
        #expect(fields["response"] == MD5.hex("\(ha1):dcd98b7102dd2f0e8b11d0f600bfb0c093:00000001:\(cnonce):auth:\(ha2)"))
        #expect(RTSPAuthorization.parameters(rfc.value(method: "GET", url: "/").dropFirst(7)[...])["nc"] == "00000002")

        #expect(RTSPAuthorization(challenges: ["Digest realm=\"r\", nonce=\"n\", algorithm=SHA-256"], user: "u", password: "p") == nil)
        #expect(RTSPAuthorization(challenges: ["Bearer"], user: "u", password: "p") == nil)
    }

    @Test func aCamerasSessionDescriptionGivesItsVideoAndSaysItsAudio() throws {
        let sdp = """
            v=0\r
            o=- 1 1 IN IP4 192.168.1.20\r
            s=Media Presentation\r
            a=control:*\r
            t=0 0\r
            m=video 0 RTP/AVP 96\r
            a=rtpmap:96 H264/90000\r
            a=fmtp:96 profile-level-id=420029; packetization-mode=1; sprop-parameter-sets=Z0IAKeKQFAe2AtwEBAaQeJEV,aM48gA==\r
            a=framerate:25.0\r
            a=control:trackID=1\r
            m=audio 0 RTP/AVP 8\r
            a=rtpmap:8 PCMA/8000\r
            a=control:trackID=2\r
            """
        let d = SessionDescription(sdp)
        let video = try #require(d.video)
        #expect(d.sessionControl == "*")
        #expect(video.encoding == "H264" && video.payloadType == 96 && video.control == "trackID=1" && video.frameRate == 25)
        #expect(Array(video.parameterSets.prefix(5)) == [0, 0, 0, 1, 0x67], "the SPS, after a start code")
        #expect(video.parameterSets.count == 4 + 18 + 4 + 4)
        #expect(d.audioEncoding == "pcm_alaw")
        let audioOnly = SessionDescription("v=0\r\nm=audio 0 RTP/AVP 0\r\n")
        #expect(audioOnly.video == nil && audioOnly.audioEncoding == "pcm_mulaw", "a static payload type needs no rtpmap")
    }

    /// A NAL unit split into three FU-A fragments, parameter sets in a STAP-A, and H.265's FU:
    /// each comes out as Annex B, whole.
    @Test func fragmentedAndAggregatedUnitsComeOutWhole() {
        let idr: [UInt8] = [0x65] + (1...3000).map { UInt8($0 % 251) }
        var h264 = NALDepacketizer(isHEVC: false)
        var out: [UInt8] = []
        let emit: (UnsafeRawBufferPointer) -> Void = { out.append(contentsOf: $0) }
        let sps: [UInt8] = [0x67, 1, 2, 3], pps: [UInt8] = [0x68, 4]
        #expect(depacketize(&h264, [24, 0, 4] + sps + [0, 2] + pps, emit))
        let body = Array(idr.dropFirst())
        let thirds = [body[0..<1000], body[1000..<2000], body[2000...]]
        for (i, part) in thirds.enumerated() {
            let header: UInt8 = (i == 0 ? 0x80 : 0) | (i == 2 ? 0x40 : 0) | 5
            #expect(depacketize(&h264, [0x60 | 28, header] + part, emit))
        }
        #expect(out == [0, 0, 0, 1] + sps + [0, 0, 0, 1] + pps + [0, 0, 0, 1] + idr)
        #expect(h264.sawKeyframe && h264.sawSlice)

        h264.startPicture()
        #expect(!depacketize(&h264, [0x41 | 28, 0x01] + [9, 9], emit), "a fragment whose start was lost")
        #expect(!h264.sawKeyframe)

        var h265 = NALDepacketizer(isHEVC: true)
        out.removeAll()
        // An IDR_W_RADL unit (type 19): header 0x26 0x01.
        #expect(depacketize(&h265, [49 << 1, 1, 0x80 | 19, 7, 7], emit))
        #expect(depacketize(&h265, [49 << 1, 1, 0x40 | 19, 8], emit))
        #expect(out == [0, 0, 0, 1, 0x26, 0x01, 7, 7, 8])
        #expect(h265.sawKeyframe)
    }

    private func depacketize(_ d: inout NALDepacketizer, _ payload: [UInt8], _ emit: (UnsafeRawBufferPointer) -> Void) -> Bool {
        payload.withUnsafeBytes { d.depacketize($0, emit: emit) }
    }

    @Test func rtpHeadersWithCSRCsExtensionAndPaddingGiveTheirPayload() throws {
        // V=2, P=1, X=1, CC=1; M=1, PT=96; seq 0x1234; ts 0x01020304; SSRC; one CSRC; a
        // one-word extension; payload AA BB; two bytes of padding.
        let bytes: [UInt8] = [0xB1, 0xE0, 0x12, 0x34, 1, 2, 3, 4, 9, 9, 9, 9, 8, 8, 8, 8, 0xBE, 0xDE, 0, 1, 5, 5, 5, 5, 0xAA, 0xBB, 0, 2]
        let packet = try #require(bytes.withUnsafeBytes { RTPPacket($0) })
        #expect(packet.marker && packet.payloadType == 96 && packet.sequence == 0x1234 && packet.timestamp == 0x01020304)
        #expect(Array(bytes[packet.payload]) == [0xAA, 0xBB])
        #expect([UInt8](repeating: 0x40, count: 12).withUnsafeBytes { RTPPacket($0) } == nil, "RTP version 1")
    }

    /// I P B B P B B sent in decode order, with presentation times going back and forth: the
    /// depth is learnt from them, and decode times rise and never pass presentation times.
    @Test func decodeTimesRiseAndStayAtOrBeforePresentation() {
        let d: Int64 = 3000
        let sent: [Int64] = [0, 3, 1, 2, 6, 4, 5, 9, 7, 8].map { 90_000 + $0 * d }
        #expect(DecodeTimeline.depth(of: sent) == 1)
        #expect(DecodeTimeline.frameTicks(of: sent) == d)
        var timeline = DecodeTimeline(depth: 1, frameTicks: d)
        let decode = sent.map { timeline.decodeTime(presentedAt: $0) }
        #expect(zip(decode, decode.dropFirst()).allSatisfy { $0 < $1 }, "\(decode)")
        #expect(zip(decode, sent).allSatisfy { $0 <= $1 })
        #expect(decode.first == 90_000 - d)

        var plain = DecodeTimeline(depth: 0, frameTicks: d)
        #expect([0, d, 2 * d].map { plain.decodeTime(presentedAt: $0) } == [0, d, 2 * d])
        // Deeper reordering than learnt: the decode time goes back (the clock makes it a break) and the depth grows.
        var shallow = DecodeTimeline(depth: 0, frameTicks: d)
        let broken = [0, 2 * d, d].map { shallow.decodeTime(presentedAt: $0) }
        #expect(broken[2] < broken[1] && shallow.depth == 1)
        // The camera's clock set back by 20 s is no reordering: the times start again from the
        // picture, and the depth stays (each set-back once added a frame of delay for good).
        var set = DecodeTimeline(depth: 0, frameTicks: d)
        let stepped = [100 * d, 101 * d, 101 * d - 1_800_000, 102 * d - 1_800_000].map { set.decodeTime(presentedAt: $0) }
        #expect(stepped == [100 * d, 101 * d, 101 * d - 1_800_000, 102 * d - 1_800_000] && set.depth == 0, "\(stepped)")

        var wrap = RTPTimestampUnwrapper()
        #expect(wrap.extend(UInt32.max - 1) == Int64(UInt32.max) - 1)
        #expect(wrap.extend(1) == Int64(UInt32.max) + 2)
        #expect(wrap.extend(UInt32.max) == Int64(UInt32.max), "a packet from just before the wrap")
    }
}
