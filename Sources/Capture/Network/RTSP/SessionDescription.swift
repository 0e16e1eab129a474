import Media

/// What an RTSP server's SDP (RFC 4566) says about its streams, as far as recording needs:
/// the video's codec, payload type, control address, frame rate and parameter sets
/// (RFC 6184 `sprop-parameter-sets`, RFC 7798 `sprop-vps/sps/pps`), and whether it sends audio.
struct SessionDescription {
    struct Video {
        /// The `a=rtpmap` encoding name, upper case (H264, H265, JPEG, MP4V-ES…).
        var encoding: String
        var payloadType: Int
        var control: String
        var frameRate: Double?
        /// Parameter sets in Annex B (start code before each), empty when the SDP has none.
        var parameterSets: [UInt8]
    }

    /// The session-level `a=control` (the address PLAY is sent to), if any.
    var sessionControl: String?
    var video: Video?
    /// The first audio stream's codec, named as FFmpeg names it (it is not recorded).
    var audioEncoding: String?

    init(_ text: String) {
        var media: Substring?
        var payloadType: Int?
        var encoding = ""
        var control = ""
        var frameRate: Double?
        var parameterSets: [UInt8] = []
        var audioPayloadType: Int?
        func finishVideo() {
            if media == "video", video == nil, let payloadType {
                video = Video(encoding: encoding, payloadType: payloadType, control: control, frameRate: frameRate, parameterSets: parameterSets)
            }
        }
        for rawLine in text.split(whereSeparator: { $0 == "\n" || $0 == "\r\n" || $0 == "\r" }) {
            let line = rawLine.trimmingSpaces
            if line.hasPrefix("m=") {
                finishVideo()
                let fields = line.dropFirst(2).split(separator: " ")
                media = fields.first
                payloadType = fields.count > 3 ? Int(fields[3]) : nil
                (encoding, control, frameRate, parameterSets) = ("", "", nil, [])
                if media == "audio", audioEncoding == nil { audioPayloadType = payloadType }
                continue
            }
            guard line.hasPrefix("a=") else { continue }
            let attribute = line.dropFirst(2)
            let colon = attribute.firstIndex(of: ":") ?? attribute.endIndex
            let name = attribute[..<colon]
            let value = colon < attribute.endIndex ? attribute[attribute.index(after: colon)...] : ""
            switch (media, name) {
            case (nil, "control"):
                sessionControl = String(value)
            case (_, "control"):
                control = String(value)
            case ("video", "rtpmap"):
                let parts = value.split(separator: " ", maxSplits: 1)
                if parts.count == 2, Int(parts[0]) == payloadType {
                    encoding = parts[1].split(separator: "/").first.map { $0.uppercased() } ?? ""
                }
            case ("audio", "rtpmap"):
                let parts = value.split(separator: " ", maxSplits: 1)
                if parts.count == 2, Int(parts[0]) == audioPayloadType {
                    audioEncoding = parts[1].split(separator: "/").first.map { Self.codecName(rtpEncoding: $0.lowercased()) }
                }
            case ("video", "framerate"):
                frameRate = Double(value.trimmingSpaces)
            case ("video", "fmtp"):
                let parts = value.split(separator: " ", maxSplits: 1)
                guard parts.count == 2 else { break }
                for parameter in parts[1].split(separator: ";") {
                    let pair = parameter.trimmingSpaces.split(separator: "=", maxSplits: 1)
                    guard pair.count == 2 else { continue }
                    switch pair[0].lowercased() {
                    case "sprop-parameter-sets", "sprop-vps", "sprop-sps", "sprop-pps":
                        for set in pair[1].split(separator: ",") {
                            guard let bytes = TextDigests.bytes(base64: String(set)), !bytes.isEmpty else { continue }
                            parameterSets += [0, 0, 0, 1] + bytes
                        }
                    default: break
                    }
                }
            default: break
            }
        }
        finishVideo()
        if audioEncoding == nil, let audioPayloadType {
            // Static payload types need no rtpmap (RFC 3551).
            audioEncoding = [0: "pcm_mulaw", 8: "pcm_alaw", 14: "mp3"][audioPayloadType] ?? "audio (RTP payload type \(audioPayloadType))"
        }
    }

    /// FFmpeg's name for an RTP audio encoding, as `vigil devices` shows codecs.
    static func codecName(rtpEncoding name: String) -> String {
        let names = ["pcma": "pcm_alaw", "pcmu": "pcm_mulaw", "mpeg4-generic": "aac", "mp4a-latm": "aac",
                     "l16": "pcm_s16be", "g722": "adpcm_g722", "g726-32": "adpcm_g726", "opus": "opus", "mpa": "mp3"]
        return names[name] ?? name
    }
}
