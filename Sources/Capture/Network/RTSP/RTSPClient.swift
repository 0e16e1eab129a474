import CheckedMath
import Logging
import Media
import Plumbing
import RTSP

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
/// Everything the camera sends is parsed by the `RTSP` library, whose parsers are pure, bounded
/// by `RTSPLimits` and fuzzed; what it refuses ends the session with `NetworkFailure.badStream`
/// naming what was wrong. Used by one thread (the camera's capture thread).
final class RTSPClient: PictureConnection {
    let address: String
    private(set) var stream = StreamDescription(videoCodec: .h264, width: 0, height: 0)
    private(set) var format: PixelFormat?
    private(set) var frameRate: Double?
    private(set) var audioCodec: String?

    let target: RTSPAddress
    let socket: RTSPSocket
    let timeoutNanos: Int64
    let interrupt: NetworkInterrupt
    var authorization: RTSPAuthorization?
    var cseq = 0
    var session: String?
    var playURL = ""
    private var rtpChannel: UInt8 = 0
    private var payloadType = 96
    var keepaliveMethod = "OPTIONS"
    var keepaliveIntervalNanos: Int64 = 30_000_000_000
    var nextKeepalive: Int64 = 0
    private var depacketizer = NALDepacketizer(isHEVC: false)
    private var timestamps = RTPTimestampUnwrapper()
    private var decodeTimes = DecodeTimeline(depth: 0, frameTicks: 3000)
    private var expectedSequence: UInt16?
    /// This session's stream among the packets that arrive (`RTPStreamPin`): set from PLAY's RTP-Info.
    var pin = RTPStreamPin(firstSequence: nil)
    private var pictureRate = PictureRateLimit()
    /// The request being answered while connecting, to say where a connection failed.
    var step = "connecting"
    /// The last thing that kept a picture from being whole (a lost packet, a fragment without
    /// its start, packets of another payload type…): said when no picture came before the deadline.
    var lastProblem: String?
    /// Kinds of problem already logged on this connection: each is said once, then counted.
    var problemsSaid: [String: Int] = [:]
    /// The first keyframe, read while connecting (its size describes the stream), delivered first.
    /// The first keyframe, read while connecting, and when it had arrived: the pictures looked
    /// ahead at after it wait in the buffer and come out at once, so its own arrival is kept
    /// (the camera clock is anchored on it; anchored at its delivery instead, every later time
    /// was placed up to the look-ahead too late and slewed back over the first minutes).
    private var firstPicture: (bytes: [UInt8], pts: Int64, arrival: Int64)?
    let logger = Logger(label: "vigil.rtsp")

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
        self.interrupt = interrupt
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
            if options.status == 401 { throw NetworkFailure.unauthorized(credentialsGiven: target.user != nil) }
            if let methods = options.header("public"), methods.uppercased().contains("GET_PARAMETER") { keepaliveMethod = "GET_PARAMETER" }
            let describe = try request("DESCRIBE", target.requestURL, headers: ["Accept: application/sdp"])
            try check(describe)
            description = SessionDescription(describe.body)
            // Made absolute: some cameras send a relative or scheme-less base.
            describeBase = RTSPAddress.resolve(describe.header("content-base") ?? describe.header("content-location") ?? "", against: target.requestURL)
        } catch {
            throw .failed(during(error))
        }
        for problem in description.problems.prefix(3) { logger.warning("\(address): the camera's SDP has \(problem)") }
        audioCodec = description.audioEncoding
        guard let video = description.video else { throw .failed(.badStream("an SDP that describes no video stream")) }
        switch video.encoding {
        case "H264": format = .h264
        case "H265", "HEVC": format = .hevc
        default: throw .unsupportedEncoding(video.encoding)
        }
        payloadType = video.payloadType
        frameRate = video.frameRate
        depacketizer = NALDepacketizer(isHEVC: format == .hevc)
        do throws(NetworkFailure) {
            let videoControl = RTSPAddress.resolve(video.control, against: describeBase)
            let setup = try request("SETUP", videoControl,
                                    headers: ["Transport: RTP/AVP/TCP;unicast;interleaved=0-1"])
            try check(setup)
            try Self.parsed { () throws(RTSPViolation) in
                if let value = setup.header("session") {
                    let header = try SessionHeader(value)
                    session = header.id
                    keepaliveIntervalNanos = header.keepaliveSeconds * 1_000_000_000
                    if let problem = header.problem { logger.warning("\(address): the camera's SETUP answer has \(problem)") }
                }
                if setup.header("transport") == nil {
                    logger.warning("\(address): the camera's SETUP answer has no Transport header; interleaved channel 0 is assumed")
                }
                rtpChannel = try interleavedChannel(transport: setup.header("transport"))
            }
            playURL = RTSPAddress.resolve(description.sessionControl ?? "", against: describeBase)
            let play = try request("PLAY", playURL, headers: ["Range: npt=0.000-"])
            try check(play)
            pin = RTPStreamPin(firstSequence: play.header("rtp-info").flatMap { RTPInfo($0).firstSequence(control: videoControl) })
            nextKeepalive = SystemClocks.monotonicNanos() + keepaliveIntervalNanos
            step = "the first keyframe"
            try readFirstKeyframe(parameterSets: video.parameterSets, deadlineNanos: deadline)
            socket.readIntervalNanos = Self.readIntervalNanos
        } catch {
            throw .failed(during(error))
        }
    }

    deinit {
        if pin.stale > 1 { logger.notice("\(address): \(pin.stale) stale RTP packets were dropped on this connection") }
        // Courtesy only: the server frees the session when the connection closes anyway.
        if session != nil {
            try? socket.send(requestText("TEARDOWN", playURL, headers: []), until: SystemClocks.monotonicNanos() + 100_000_000)
        }
    }

    func readPicture(into frame: CapturedFrame, deadlineNanos: Int64) throws(NetworkError) -> NetworkPicture {
        if let first = firstPicture {
            firstPicture = nil
            guard frame.reserve(first.bytes.count) else {
                throw NetworkError(address: address, failure: .other("out of memory for a \(first.bytes.count)-byte picture"))
            }
            first.bytes.withUnsafeBytes { frame.storage.baseAddress!.copyMemory(from: $0.baseAddress!, byteCount: $0.count) }
            return NetworkPicture(
                byteCount: first.bytes.count, pts: first.pts, dts: decodeTimes.decodeTime(presentedAt: first.pts), keyframe: true,
                arrivalMonotonic: first.arrival)
        }
        do throws(NetworkFailure) {
            try sendKeepaliveIfDue()
            var byteCount = 0
            var allocated = true
            let picture = try readAccessUnit(until: deadlineNanos) { piece in
                guard allocated, frame.reserve(byteCount + piece.count, keeping: byteCount) else {
                    allocated = false
                    return
                }
                (frame.storage.baseAddress! + byteCount).copyMemory(from: piece.baseAddress!, byteCount: piece.count)
                byteCount += piece.count
            } restart: {
                byteCount = 0
            }
            guard allocated else { throw NetworkFailure.other("out of memory for a \(byteCount)-byte picture") }
            guard pictureRate.admit(atNanos: SystemClocks.monotonicNanos()) else {
                throw NetworkFailure.badStream(RTSPViolation.tooManyPictures(limit: RTSPLimits.picturesPerSecond).description)
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
    /// packet stays in the buffer for the next picture). The deadline is checked on every packet,
    /// whatever the socket delivers; a picture over `RTSPLimits.pictureBytes` ends the session.
    private func readAccessUnit(until deadlineNanos: Int64, emit: (UnsafeRawBufferPointer) -> Void, restart: () -> Void) throws(NetworkFailure) -> (pts: Int64, keyframe: Bool) {
        var timestamp: UInt32?
        var broken = false
        var pictureBytes = 0
        depacketizer.startPicture()
        func drop(_ kind: String, _ problem: String) {
            if !broken { noteProblem(kind, problem) }
            broken = true
        }
        func complete() -> Bool {
            if !broken && depacketizer.inFragment { drop("fragment-end", "the camera sent a fragment without its end (the picture is dropped)") }
            return !broken && depacketizer.sawSlice
        }
        while true {
            if SystemClocks.monotonicNanos() >= deadlineNanos {
                guard let problem = lastProblem else { throw .timeout }
                throw .badStream("no whole picture before the deadline; last problem: \(problem)")
            }
            guard let (channel, bytes, length) = try nextInterleaved() else {
                try socket.receive(until: deadlineNanos)
                continue
            }
            guard channel == rtpChannel || channel == rtpChannel &+ 1 else {
                noteProblem("channel", "the camera sent interleaved packets on channel \(channel), where SETUP gave channel \(rtpChannel) (ignored)")
                socket.consume(length)
                continue
            }
            guard channel == rtpChannel else {  // RTCP
                socket.consume(length)
                continue
            }
            guard let rtp = RTPPacket(bytes) else {
                noteProblem("rtp-header", "the camera sent a packet on the RTP channel that is not RTP version 2, or whose header lengths run past it (ignored)")
                socket.consume(length)
                continue
            }
            guard rtp.payloadType == payloadType else {
                noteProblem("payload-type", "the camera sent RTP packets of payload type \(rtp.payloadType), where the SDP said \(payloadType) (ignored)")
                socket.consume(length)
                continue
            }
            guard admitted(rtp) else {
                socket.consume(length)
                continue
            }
            if let current = timestamp, rtp.timestamp != current {
                if complete() { return (timestamps.extend(current), depacketizer.sawKeyframe) }
                broken = false
                pictureBytes = 0
                depacketizer.startPicture()
                restart()
            }
            timestamp = rtp.timestamp
            if let expected = expectedSequence, rtp.sequence != expected {
                drop("sequence", "lost \(rtp.sequence &- expected) RTP packet(s) (sequence \(rtp.sequence), expected \(expected)); the picture is dropped")
            }
            expectedSequence = rtp.sequence &+ 1
            if !broken {
                let readable = depacketizer.depacketize(UnsafeRawBufferPointer(rebasing: bytes[rtp.payload])) { piece in
                    pictureBytes += piece.count
                    if pictureBytes <= RTSPLimits.pictureBytes { emit(piece) }
                }
                if !readable { drop("payload", "the camera sent an RTP payload that cannot be put together (a fragment without its start or end, an aggregate whose unit sizes run past the packet, or an unknown packetization); the picture is dropped") }
                if pictureBytes > RTSPLimits.pictureBytes { throw .badStream(RTSPViolation.pictureTooLarge(limit: RTSPLimits.pictureBytes).description) }
            }
            socket.consume(length)
            if rtp.marker {
                if complete() { return (timestamps.extend(rtp.timestamp), depacketizer.sawKeyframe) }
                timestamp = nil
                broken = false
                pictureBytes = 0
                depacketizer.startPicture()
                restart()
            }
        }
    }

    /// The interleaved packet at the front of the buffer: its channel, its data and its whole
    /// length; nil until it arrived whole. RTSP messages between packets (answers to keep-alives,
    /// a server's requests) and bytes that are neither are consumed on the way.
    private func nextInterleaved() throws(NetworkFailure) -> (UInt8, UnsafeRawBufferPointer, Int)? {
        while true {
            let bytes = socket.unread
            switch try Self.parsed({ () throws(RTSPViolation) in try InterleavedFraming.next(bytes) }) {
            case .needMore:
                return nil
            case let .packet(channel, data, length):
                return (channel, UnsafeRawBufferPointer(rebasing: bytes[data]), length)
            case let .message(message, length):
                socket.consume(length)
                if message.status == 454 { throw .ended }  // Session Not Found: the server dropped us
            case let .junk(length):
                noteProblem("junk", "the camera sent \(length) bytes between interleaved packets that are neither RTP nor RTSP (skipped)")
                socket.consume(length)
            }
        }
    }

    /// Reads until the first keyframe, which describes the stream (size, and parameter sets when
    /// the SDP had none), keeps it to be delivered first, and looks at the timestamps of the
    /// pictures after it (without consuming them) to learn the camera's reordering depth.
    private func readFirstKeyframe(parameterSets: [UInt8], deadlineNanos: Int64) throws(NetworkFailure) {
        var bytes: [UInt8] = []
        var picture: (pts: Int64, keyframe: Bool)
        var others = 0
        repeat {
            bytes.removeAll(keepingCapacity: true)
            picture = try readAccessUnit(until: deadlineNanos) { bytes.append(contentsOf: $0) } restart: { bytes.removeAll(keepingCapacity: true) }
            if !picture.keyframe {
                others += 1
                step = "the first keyframe (\(others) pictures arrived, none a keyframe)"
            }
        } while !picture.keyframe
        var keyframeSets: [UInt8] = []
        bytes.withUnsafeBytes { AnnexB.parameterSets($0, hevc: format == .hevc, into: &keyframeSets) }
        func described(by sets: [UInt8]) -> StreamDescription {
            sets.withUnsafeBytes { s in bytes.withUnsafeBytes { StreamDescription(videoCodec: format!, parameterSets: s, picture: $0) } }
        }
        // A size that cannot be read or cannot be a camera's would only make every segment's header fail.
        func plausible(_ s: StreamDescription) -> Bool { (16...16384).contains(s.width) && (16...16384).contains(s.height) }
        // The sets the stream itself carries are the ones its pictures were coded with: they win
        // over the SDP's (which may be stale, truncated or malformed), said when they differ.
        let inBand = keyframeSets.withUnsafeBytes { AnnexB.hasEveryParameterSet($0, hevc: format == .hevc) }
        if inBand, !parameterSets.isEmpty, keyframeSets != parameterSets {
            logger.notice("\(address): the parameter sets (SPS/PPS) in the camera's SDP differ from those in its stream; the stream's are used")
        }
        stream = described(by: inBand || parameterSets.isEmpty ? keyframeSets : parameterSets)
        guard plausible(stream) else {
            throw .badStream(RTSPViolation.badPictureSize(width: stream.width, height: stream.height).description)
        }
        firstPicture = (bytes, picture.pts, SystemClocks.monotonicNanos())
        let times = [picture.pts] + lookAhead(until: min(deadlineNanos, SystemClocks.monotonicNanos() + 1_000_000_000))
        let measuredTicks = DecodeTimeline.frameTicks(of: times)
        decodeTimes = DecodeTimeline(
            depth: DecodeTimeline.depth(of: times),
            frameTicks: measuredTicks ?? frameRate.flatMap { Int64(checked: 90_000 / $0) } ?? 3000)
        // Many cameras' SDPs do not say their frame rate: their timestamps do.
        if frameRate == nil, let ticks = measuredTicks, ticks >= 90 { frameRate = 90_000 / Double(ticks) }
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
            if case let .packet(channel, data, length)? = try? InterleavedFraming.next(bytes, at: scanned) {
                if channel == rtpChannel, let rtp = RTPPacket(UnsafeRawBufferPointer(rebasing: bytes[data])),
                   rtp.payloadType == payloadType, pin.wouldAdmit(ssrc: rtp.ssrc), rtp.timestamp != lastTimestamp {
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
}
