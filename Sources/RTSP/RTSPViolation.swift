/// What a camera sent that Vigil refuses, named so that the log says what was wrong: a malformed
/// or oversized answer, a broken session header, a picture without end. The text a camera sent
/// is quoted through `CameraText`, short and printable.
package enum RTSPViolation: Error, Equatable, Sendable, CustomStringConvertible {
    case headerTooLarge(limit: Int)
    case headerLineTooLong(limit: Int, start: String)
    case badStatusLine(String)
    case badContentLength(String)
    case bodyTooLarge(length: String, limit: Int)
    case missingCSeq
    case wrongCSeq(expected: Int, received: String)
    case redirected(status: Int, location: String)
    case badSession(String)
    case badTransport(String)
    case pictureTooLarge(limit: Int)
    case tooManyPictures(limit: Int)
    case badPictureSize(width: Int, height: Int)

    package var description: String {
        switch self {
        case .headerTooLarge(let limit): return "an RTSP answer header larger than \(limit) bytes"
        case .headerLineTooLong(let limit, let start): return "an RTSP header line longer than \(limit) bytes, starting \(start)"
        case .badStatusLine(let line): return "a malformed RTSP status line \(line)"
        case .badContentLength(let value): return "a Content-Length that is not a length: \(value)"
        case .bodyTooLarge(let length, let limit): return "a Content-Length of \(length) bytes (at most \(limit) accepted for an answer's body or SDP)"
        case .missingCSeq: return "an RTSP answer without CSeq"
        case .wrongCSeq(let expected, let received): return "an RTSP answer with CSeq \(received) to request \(expected)"
        case .redirected(let status, let location): return "a redirect (\(status)) to \(location): put that address in the configuration"
        case .badSession(let value): return "a malformed Session header \(value)"
        case .badTransport(let value): return "a Transport header without the interleaved TCP channels asked for: \(value) (a camera that streams only over UDP is recorded with transport = \"udp\")"
        case .pictureTooLarge(let limit): return "a picture larger than \(limit / (1024 * 1024)) MiB (no RTP marker bit to end it?)"
        case .tooManyPictures(let limit): return "more than \(limit) pictures a second (broken RTP timestamps or marker bits?)"
        case .badPictureSize(let width, let height): return "a picture size of \(width)x\(height) in its parameter sets (SPS)"
        }
    }
}

/// Text a camera sent, made safe to print: at most `limit` characters, control and non-ASCII
/// bytes escaped, in quotes. A log line can then neither be forged nor flooded by a camera.
package enum CameraText {
    package static func quoted<S: StringProtocol>(_ text: S, limit: Int = 80) -> String {
        var out = "\""
        var count = 0
        for scalar in text.unicodeScalars {
            if count == limit {
                out += "…"
                break
            }
            count += 1
            switch scalar.value {
            case 0x20..<0x7F where scalar != "\"" && scalar != "\\": out.unicodeScalars.append(scalar)
            default: out += "\\u{\(String(scalar.value, radix: 16))}"
            }
        }
        return out + "\""
    }
}
