import Logging
import Media
import Plumbing
import RTSP

/// RTSP requests and their answers: CSeq, session and authorization headers, a 401 challenge
/// answered once, keep-alives, and answers turned into failures a user can act on.
extension RTSPClient {
    /// Sends a request and reads its answer, answering a 401 challenge once with the address's
    /// credentials.
    func request(_ method: String, _ url: String, headers: [String] = []) throws(NetworkFailure) -> RTSPResponse {
        var answeredChallenge = false
        step = "the answer to \(method)"
        while true {
            let deadline = SystemClocks.monotonicNanos() + timeoutNanos
            try socket.send(requestText(method, url, headers: headers), until: deadline)
            let response = try readResponse(to: cseq, until: deadline)
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

    func requestText(_ method: String, _ url: String, headers: [String]) -> String {
        cseq += 1
        var text = "\(method) \(url) RTSP/1.0\r\nCSeq: \(cseq)\r\nUser-Agent: Vigil\r\n"
        if let session { text += "Session: \(session)\r\n" }
        if authorization != nil { text += "Authorization: \(authorization!.value(method: method, url: url))\r\n" }
        for header in headers { text += header + "\r\n" }
        return text + "\r\n"
    }

    /// The answer to request `cseq` (interleaved packets, server requests and answers to earlier
    /// requests before it are skipped). An answer without CSeq, or with a later one, is refused.
    func readResponse(to cseq: Int, until deadlineNanos: Int64) throws(NetworkFailure) -> RTSPResponse {
        while true {
            let bytes = socket.unread
            switch try Self.parsed({ () throws(RTSPViolation) in try InterleavedFraming.next(bytes) }) {
            case .needMore:
                if socket.isFull { throw .badStream("an RTSP answer larger than \(RTSPSocket.capacity) bytes") }
                try socket.receive(until: deadlineNanos)
            case let .packet(_, _, length):
                socket.consume(length)
            case let .junk(length):
                // Blank lines between messages are harmless; anything else cannot come before an answer.
                let blank = bytes.prefix { $0 == 0x0D || $0 == 0x0A || $0 == 0x20 || $0 == 0x09 }.count
                if blank > 0 {
                    socket.consume(blank)
                    continue
                }
                let start = String(decoding: bytes[..<min(length, 40)], as: UTF8.self)
                throw .badStream(RTSPViolation.badStatusLine(CameraText.quoted(start)).description)
            case let .message(response, length):
                socket.consume(length)
                guard response.status != 0 else { continue }
                guard let value = response.header("cseq") else { throw .badStream(RTSPViolation.missingCSeq.description) }
                let cseqs = response.headers.filter { $0.name.lowercased() == "cseq" }.count
                if cseqs > 1 { logger.notice("\(address): the camera's answer has \(cseqs) CSeq headers; the first is used") }
                if let received = Int(value), received >= 1, received < cseq { continue }  // a late answer to an earlier request
                guard Int(value) == cseq else {
                    throw .badStream(RTSPViolation.wrongCSeq(expected: cseq, received: CameraText.quoted(value, limit: 24)).description)
                }
                return response
            }
        }
    }

    /// Remembers `text` as the last problem and logs it the first time its `kind` is seen on this
    /// connection (a camera that sends bad packets all day gets one warning, then debug lines).
    func noteProblem(_ kind: String, _ text: String) {
        lastProblem = text
        let count = problemsSaid[kind, default: 0]
        problemsSaid[kind] = count &+ 1
        if count == 0 {
            logger.warning("\(address): \(text)")
        } else {
            logger.debug("\(address): \(text)")
        }
    }

    /// True when the packet is this session's stream (`RTPStreamPin`); a stale one is said.
    func admitted(_ rtp: RTPPacket) -> Bool {
        guard pin.admit(ssrc: rtp.ssrc, sequence: rtp.sequence, nowNanos: SystemClocks.monotonicNanos()) else {
            noteProblem("stale", staleProblem(rtp))
            return false
        }
        if pin.gaveUpOnRTPInfo && problemsSaid["rtp-info"] == nil {
            noteProblem("rtp-info", "the camera's PLAY answer announced RTP sequence \(pin.firstSequence.map(String.init) ?? "?"), which never came; its stream is taken as it is")
        }
        return true
    }

    /// Why a packet was not taken as this session's (`RTPStreamPin`).
    private func staleProblem(_ rtp: RTPPacket) -> String {
        let ssrc = String(rtp.ssrc, radix: 16)
        if let pinned = pin.ssrc {
            return "the camera sent RTP packets of another stream (SSRC \(ssrc), where this session's is \(String(pinned, radix: 16))): dropped as stale"
        }
        return "the camera sent RTP packets of an earlier session (sequence \(rtp.sequence), where its PLAY answer's RTP-Info begins at \(pin.firstSequence.map(String.init) ?? "?"); SSRC \(ssrc)): dropped as stale"
    }

    /// A connection that closed or went silent while connecting, said with the step it was at
    /// (a camera that hangs up after SETUP is a different fault from one that never answers).
    func during(_ failure: NetworkFailure) -> NetworkFailure {
        switch failure {
        case .ended: return .other("the camera closed the connection while Vigil waited for \(step)")
        case .timeout: return .other("timed out waiting for \(step) (\(timeoutNanos / 1_000_000_000) s)")
        // A probe's one deadline for everything (`vigil devices --url`) ends waits as an abort.
        case .aborted where interrupt.hasGivenUp: return .other("timed out waiting for \(step)")
        default: return failure
        }
    }

    /// Runs a parser of what the camera sent; what it refuses becomes `.badStream` naming it.
    static func parsed<T>(_ parse: () throws(RTSPViolation) -> T) throws(NetworkFailure) -> T {
        do {
            return try parse()
        } catch {
            throw .badStream(error.description)
        }
    }

    /// Keeps the session alive (servers end sessions that say nothing for their timeout,
    /// usually 60 s); the answer is skipped among the packets.
    func sendKeepaliveIfDue() throws(NetworkFailure) {
        let now = SystemClocks.monotonicNanos()
        guard now >= nextKeepalive else { return }
        nextKeepalive = now + keepaliveIntervalNanos
        try socket.send(requestText(keepaliveMethod, playURL, headers: []), until: now + timeoutNanos)
    }

    /// An answer other than 2xx, as the failure a user can act on.
    func check(_ response: RTSPResponse) throws(NetworkFailure) {
        switch response.status {
        case 200..<300: return
        case 300..<400:
            let location = response.header("location").map { CameraText.quoted(redactedAddress($0)) } ?? "nowhere (no Location)"
            throw .badStream(RTSPViolation.redirected(status: response.status, location: location).description)
        case 401: throw .unauthorized(credentialsGiven: target.user != nil)
        case 403: throw .forbidden
        case 404: throw .notFound
        default: throw .other("the camera answered \(response.status) \(CameraText.quoted(response.reason, limit: 60))")
        }
    }
}
