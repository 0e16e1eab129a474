import Logging
import Media

/// Why Vigil's RTSP client did not connect: a failure to report, or a stream it does not
/// depacketize (libavformat is tried then).
enum RTSPClientError: Error {
    case failed(NetworkFailure)
    case unsupportedEncoding(String)
}

/// Vigil's own RTSP client for H.264 and H.265 cameras over TCP (RTSP 1.0, RFC 2326, with RTP
/// interleaved on the RTSP connection): OPTIONS, DESCRIBE (Basic or Digest authentication),
/// SETUP, PLAY, keep-alives, TEARDOWN. Each picture's RTP packets are put together straight
/// into the frame's storage, ended by the RTP marker bit; nothing is parsed beyond the NAL
/// headers, and a burst of packets is one `recv`. libavformat's RTSP demuxer, by contrast,
/// reads each packet with a poll and two receives and runs every picture through a parser.
/// Used by one thread (the camera's capture thread).
final class RTSPClient: PictureConnection {
    let address: String
    private(set) var stream = StreamDescription(videoCodec: .h264, width: 0, height: 0)
    private(set) var format: PixelFormat?
    private(set) var frameRate: Double?
    private(set) var audioCodec: String?

    private let target: RTSPAddress
    private let socket: RTSPSocket
    private let timeoutNanos: Int64
    private var authorization: RTSPAuthorization?
    private var cseq = 0
    private var session: String?
    private var playURL = ""
    private var rtpChannel: UInt8 = 0
    private var payloadType = 96
    private var keepaliveMethod = "OPTIONS"
    private var keepaliveIntervalNanos: Int64 = 30_000_000_000
    private var nextKeepalive: Int64 = 0
    private var depacketizer = NALDepacketizer(isHEVC: false)
    private var timestamps = RTPTimestampUnwrapper()
    private var decodeTimes = DecodeTimeline(depth: 0, frameTicks: 3000)
    private var expectedSequence: UInt16?
    /// The first keyframe, read while connecting (its size describes the stream), delivered first.
    private var firstPicture: (bytes: [UInt8], pts: Int64)?
    private let logger = Logger(label: "vigil.rtsp")

    /// Once streaming, the socket is read at most every 100 ms: a camera sends each RTP packet
    /// on its own, and waking for each costs far more than its bytes (receiving a 1080p30
    /// stream packet by packet takes 0.18 % of a core here, every 100 ms 0.05 %). Recording
    /// needs no packet sooner; frames keep their camera times, and the live view shows them
    /// at most 100 ms later.
    static let readIntervalNanos: Int64 = 100_000_000

    /// How many pictures after the first keyframe are looked at (not consumed) to learn how
    /// deeply the camera reorders them (B-frames).
    static let reorderLookahead = 8

    /// Connects to `target` (`address` is how messages name it) and reads until the first keyframe.
    init(_ target: RTSPAddress, address: String, timeoutNanos: Int64, interrupt: NetworkInterrupt) throws(RTSPClientError) {
        self.target = target
        self.timeoutNanos = timeoutNanos
        self.address = address
        let deadline = SystemClocks.monotonicNanos() + timeoutNanos
        do {
            socket = try RTSPSocket(host: target.host, port: target.port, deadlineNanos: deadline, interrupt: interrupt)
        } catch {
            throw .failed(error)
        }
        let description: SessionDescription
        let describeBase: String
        do throws(NetworkFailure) {
            let options = try request("OPTIONS", target.requestURL)
            if options.status == 401 { throw NetworkFailure.unauthorized }
            if let methods = options.header("public"), methods.uppercased().contains("GET_PARAMETER") { keepaliveMethod = "GET_PARAMETER" }
            let describe = try request("DESCRIBE", target.requestURL, headers: ["Accept: application/sdp"])
            try Self.check(describe)
            description = SessionDescription(describe.body)
            describeBase = describe.header("content-base") ?? describe.header("content-location") ?? target.requestURL
        } catch {
            throw .failed(error)
        }
        audioCodec = description.audioEncoding
        guard let video = description.video else { throw .failed(.other("the camera's stream has no video")) }
        switch video.encoding {
        case "H264": format = .h264
        case "H265", "HEVC": format = .hevc
        default: throw .unsupportedEncoding(video.encoding)
        }
        payloadType = video.payloadType
        frameRate = video.frameRate
        depacketizer = NALDepacketizer(isHEVC: format == .hevc)
        do throws(NetworkFailure) {
            let setup = try request("SETUP", RTSPAddress.resolve(video.control, against: describeBase),
                                    headers: ["Transport: RTP/AVP/TCP;unicast;interleaved=0-1"])
            try Self.check(setup)
            if let value = setup.header("session") {
                let parts = value.split(separator: ";")
                session = parts.first.map { String($0.trimmingSpaces) }
                if let timeout = parts.dropFirst().first(where: { $0.trimmingSpaces.lowercased().hasPrefix("timeout=") }),
                   let seconds = Int64(timeout.trimmingSpaces.dropFirst(8)), seconds > 0 {
                    keepaliveIntervalNanos = max(seconds / 2, 2) * 1_000_000_000
                }
            }
            if let transport = setup.header("transport"),
               let interleaved = transport.split(separator: ";").first(where: { $0.trimmingSpaces.lowercased().hasPrefix("interleaved=") }),
               let channel = UInt8(interleaved.trimmingSpaces.dropFirst(12).split(separator: "-").first ?? "") {
                rtpChannel = channel
            }
            playURL = RTSPAddress.resolve(description.sessionControl ?? "", against: describeBase)
            try Self.check(try request("PLAY", playURL, headers: ["Range: npt=0.000-"]))
            nextKeepalive = SystemClocks.monotonicNanos() + keepaliveIntervalNanos
            try readFirstKeyframe(parameterSets: video.parameterSets, deadlineNanos: deadline)
            socket.readIntervalNanos = Self.readIntervalNanos
        } catch {
            throw .failed(error)
        }
    }

    deinit {
        // Courtesy only: the server frees the session when the connection closes anyway.
        if session != nil {
            try? socket.send(requestText("TEARDOWN", playURL, headers: []), until: SystemClocks.monotonicNanos() + 100_000_000)
        }
    }

    func readPicture(into frame: CapturedFrame, deadlineNanos: Int64) throws(NetworkError) -> NetworkPicture {
        if let first = firstPicture {
            firstPicture = nil
            frame.reserve(first.bytes.count)
            first.bytes.withUnsafeBytes { frame.storage.baseAddress!.copyMemory(from: $0.baseAddress!, byteCount: $0.count) }
            return NetworkPicture(byteCount: first.bytes.count, pts: first.pts, dts: decodeTimes.decodeTime(presentedAt: first.pts), keyframe: true)
        }
        do {
            try sendKeepaliveIfDue()
            var byteCount = 0
            let picture = try readAccessUnit(until: deadlineNanos) { piece in
                frame.reserve(byteCount + piece.count, keeping: byteCount)
                (frame.storage.baseAddress! + byteCount).copyMemory(from: piece.baseAddress!, byteCount: piece.count)
                byteCount += piece.count
            } restart: {
                byteCount = 0
            }
            return NetworkPicture(byteCount: byteCount, pts: picture.pts, dts: decodeTimes.decodeTime(presentedAt: picture.pts), keyframe: picture.keyframe)
        } catch {
            throw NetworkError(address: address, failure: error)
        }
    }

    // MARK: Pictures

    /// Reads the RTP packets of one whole picture (a picture with a lost or unreadable packet is
    /// dropped, `restart` called, and the next one read), giving its Annex B bytes to `emit`.
    /// A picture ends at its marker bit, or where a packet with another timestamp begins (that
    /// packet stays in the buffer for the next picture).
    private func readAccessUnit(until deadlineNanos: Int64, emit: (UnsafeRawBufferPointer) -> Void, restart: () -> Void) throws(NetworkFailure) -> (pts: Int64, keyframe: Bool) {
        var timestamp: UInt32?
        var broken = false
        depacketizer.startPicture()
        while true {
            guard let (channel, bytes, length) = try nextInterleaved() else {
                try socket.receive(until: deadlineNanos)
                continue
            }
            guard channel == rtpChannel, let rtp = RTPPacket(bytes), rtp.payloadType == payloadType else {
                socket.consume(length)
                continue
            }
            if let current = timestamp, rtp.timestamp != current {
                if !broken && depacketizer.sawSlice { return (timestamps.extend(current), depacketizer.sawKeyframe) }
                broken = false
                depacketizer.startPicture()
                restart()
            }
            timestamp = rtp.timestamp
            if let expected = expectedSequence, rtp.sequence != expected {
                logger.debug("\(address): lost \(rtp.sequence &- expected) RTP packet(s); the picture is dropped")
                broken = true
            }
            expectedSequence = rtp.sequence &+ 1
            if !broken && !depacketizer.depacketize(UnsafeRawBufferPointer(rebasing: bytes[rtp.payload]), emit: emit) { broken = true }
            socket.consume(length)
            if rtp.marker {
                if !broken && depacketizer.sawSlice { return (timestamps.extend(rtp.timestamp), depacketizer.sawKeyframe) }
                timestamp = nil
                broken = false
                depacketizer.startPicture()
                restart()
            }
        }
    }

    /// The whole length (header included) of the interleaved packet at `offset` (`$`, channel,
    /// 16-bit length, data), once all of it is in `bytes`.
    private static func interleavedLength(_ bytes: UnsafeRawBufferPointer, at offset: Int) -> Int? {
        guard offset + 4 <= bytes.count else { return nil }
        let length = 4 + (Int(bytes[offset + 2]) << 8 | Int(bytes[offset + 3]))
        return offset + length <= bytes.count ? length : nil
    }

    /// The interleaved packet at the front of the buffer (`$`, channel, 16-bit length, data):
    /// its channel, its data and its whole length; nil until it arrived whole. RTSP messages
    /// between packets (answers to keep-alives, a server's requests) are consumed on the way.
    private func nextInterleaved() throws(NetworkFailure) -> (UInt8, UnsafeRawBufferPointer, Int)? {
        while true {
            let bytes = socket.unread
            guard let first = bytes.first else { return nil }
            if first == UInt8(ascii: "$") {
                guard let length = Self.interleavedLength(bytes, at: 0) else { return nil }
                return (bytes[1], UnsafeRawBufferPointer(rebasing: bytes[4..<length]), length)
            }
            if (UInt8(ascii: "A")...UInt8(ascii: "Z")).contains(first) {
                guard let (message, length) = RTSPResponse.parse(bytes) else {
                    if bytes.count < 16384 { return nil }
                    socket.consume(1)  // not a message after all: look for the next packet
                    continue
                }
                socket.consume(length)
                if message.status == 454 { throw .ended }  // Session Not Found: the server dropped us
                continue
            }
            // Neither a packet nor a message: skip to the next `$`.
            socket.consume(bytes.firstIndex(of: UInt8(ascii: "$")) ?? bytes.count)
        }
    }

    /// Reads until the first keyframe, which describes the stream (size, and parameter sets when
    /// the SDP had none), keeps it to be delivered first, and looks at the timestamps of the
    /// pictures after it (without consuming them) to learn the camera's reordering depth.
    private func readFirstKeyframe(parameterSets: [UInt8], deadlineNanos: Int64) throws(NetworkFailure) {
        var bytes: [UInt8] = []
        var picture: (pts: Int64, keyframe: Bool)
        repeat {
            bytes.removeAll(keepingCapacity: true)
            picture = try readAccessUnit(until: deadlineNanos) { bytes.append(contentsOf: $0) } restart: { bytes.removeAll(keepingCapacity: true) }
        } while !picture.keyframe
        var sets = parameterSets
        if sets.isEmpty { bytes.withUnsafeBytes { AccessUnit.parameterSets($0, format: format!, into: &sets) } }
        stream = sets.withUnsafeBytes { s in bytes.withUnsafeBytes { StreamDescription(videoCodec: format!, parameterSets: s, picture: $0) } }
        firstPicture = (bytes, picture.pts)
        let times = [picture.pts] + lookAhead(until: min(deadlineNanos, SystemClocks.monotonicNanos() + 1_000_000_000))
        let measuredTicks = DecodeTimeline.frameTicks(of: times)
        decodeTimes = DecodeTimeline(
            depth: DecodeTimeline.depth(of: times),
            frameTicks: measuredTicks ?? frameRate.map { Int64(90_000 / $0) } ?? 3000)
        // Many cameras' SDPs do not say their frame rate: their timestamps do.
        if frameRate == nil, let ticks = measuredTicks { frameRate = 90_000 / Double(ticks) }
    }

    /// The presentation times of up to `reorderLookahead` pictures after the first keyframe, read
    /// from the buffer without consuming it (as many as arrive before `deadlineNanos` or fill it).
    private func lookAhead(until deadlineNanos: Int64) -> [Int64] {
        var times: [Int64] = []
        var previous = timestamps
        var scanned = 0
        var lastTimestamp: UInt32?
        while times.count < Self.reorderLookahead {
            let bytes = socket.unread
            // A message between packets (an answer, a server's request): enough to go on.
            if scanned < bytes.count && bytes[scanned] != UInt8(ascii: "$") { break }
            if let length = Self.interleavedLength(bytes, at: scanned) {
                if bytes[scanned + 1] == rtpChannel,
                   let rtp = RTPPacket(UnsafeRawBufferPointer(rebasing: bytes[(scanned + 4)..<(scanned + length)])),
                   rtp.payloadType == payloadType, rtp.timestamp != lastTimestamp {
                    lastTimestamp = rtp.timestamp
                    times.append(previous.extend(rtp.timestamp))
                }
                scanned += length
                continue
            }
            if socket.isFull { break }
            do { try socket.receive(until: deadlineNanos) } catch { break }
        }
        return times
    }

    // MARK: Requests

    /// Sends a request and reads its answer, answering a 401 challenge once with the address's
    /// credentials.
    private func request(_ method: String, _ url: String, headers: [String] = []) throws(NetworkFailure) -> RTSPResponse {
        var answeredChallenge = false
        while true {
            let deadline = SystemClocks.monotonicNanos() + timeoutNanos
            try socket.send(requestText(method, url, headers: headers), until: deadline)
            let response = try readResponse(until: deadline)
            if response.status == 401, !answeredChallenge, let user = target.user {
                let challenges = response.headers.filter { $0.name.lowercased() == "www-authenticate" }.map(\.value)
                guard let answer = RTSPAuthorization(challenges: challenges, user: user, password: target.password ?? "") else {
                    throw .other("the camera asks for an authentication Vigil does not know: \(challenges.joined(separator: "; "))")
                }
                authorization = answer
                answeredChallenge = true
                continue
            }
            return response
        }
    }

    private func requestText(_ method: String, _ url: String, headers: [String]) -> String {
        cseq += 1
        var text = "\(method) \(url) RTSP/1.0\r\nCSeq: \(cseq)\r\nUser-Agent: Vigil\r\n"
        if let session { text += "Session: \(session)\r\n" }
        if authorization != nil { text += "Authorization: \(authorization!.value(method: method, url: url))\r\n" }
        for header in headers { text += header + "\r\n" }
        return text + "\r\n"
    }

    /// The next answer on the connection (interleaved packets and server requests before it are skipped).
    private func readResponse(until deadlineNanos: Int64) throws(NetworkFailure) -> RTSPResponse {
        while true {
            let bytes = socket.unread
            if let first = bytes.first, first == UInt8(ascii: "$") {
                if let length = Self.interleavedLength(bytes, at: 0) {
                    socket.consume(length)
                    continue
                }
            } else if let (response, length) = RTSPResponse.parse(bytes) {
                socket.consume(length)
                if response.status != 0 { return response }
                continue
            }
            if socket.isFull { throw .other("the server's answer is larger than \(RTSPSocket.capacity) bytes") }
            try socket.receive(until: deadlineNanos)
        }
    }

    /// Keeps the session alive (servers end sessions that say nothing for their timeout,
    /// usually 60 s); the answer is skipped among the packets.
    private func sendKeepaliveIfDue() throws(NetworkFailure) {
        let now = SystemClocks.monotonicNanos()
        guard now >= nextKeepalive else { return }
        nextKeepalive = now + keepaliveIntervalNanos
        try socket.send(requestText(keepaliveMethod, playURL, headers: []), until: now + timeoutNanos)
    }

    /// An answer other than 2xx, as the failure a user can act on.
    private static func check(_ response: RTSPResponse) throws(NetworkFailure) {
        switch response.status {
        case 200..<300: return
        case 401: throw .unauthorized
        case 403: throw .forbidden
        case 404: throw .notFound
        default: throw .other("the camera answered \(response.status) \(response.reason)")
        }
    }
}
