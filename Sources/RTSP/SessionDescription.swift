/// What an RTSP server's SDP (RFC 4566) says about its streams, as far as recording needs:
/// the video's codec, payload type, control address, frame rate and parameter sets
/// (RFC 6184 `sprop-parameter-sets`, RFC 7798 `sprop-vps/sps/pps`), and whether it sends audio.
/// Values out of range are left out and named in `problems`, for the log.
package struct SessionDescription: Sendable {
    package struct Video: Sendable {
        /// The `a=rtpmap` encoding name, upper case (H264, H265, JPEG, MP4V-ES…).
        package var encoding: String
        package var payloadType: Int
        package var control: String
        /// From `a=framerate`, when it is a rate a camera can have (above 0, at most 1000).
        package var frameRate: Double?
        /// Parameter sets in Annex B (start code before each) in the order decoders need them
        /// (H.265: VPS, SPS, PPS, whatever order the SDP lists them in); empty when it has none.
        package var parameterSets: [UInt8]
    }

    /// The session-level `a=control` (the address PLAY is sent to), if any.
    package var sessionControl: String?
    package var video: Video?
    /// The first audio stream's codec, named as FFmpeg names it (it is not recorded).
    package var audioEncoding: String?
    /// What was wrong in the SDP and left out (quoted as the camera sent it).
    package var problems: [String] = []

    package init(_ text: String) {
        var media: Substring?
        var payloadType: Int?
        var encoding = ""
        var control = ""
        var frameRate: Double?
        // sprop-parameter-sets or sprop-vps, then sprop-sps, then sprop-pps.
        var parameterSets: [[UInt8]] = [[], [], [], []]
        var audioPayloadType: Int?
        func finishVideo() {
            if media == "video", video == nil, let payloadType {
                video = Video(encoding: encoding, payloadType: payloadType, control: control, frameRate: frameRate,
                              parameterSets: parameterSets.flatMap { $0 })
            }
        }
        for rawLine in text.split(whereSeparator: { $0 == "\n" || $0 == "\r\n" || $0 == "\r" }) {
            let line = rawLine.trimmingSpaces
            if line.hasPrefix("m=") {
                finishVideo()
                let fields = line.dropFirst(2).split(separator: " ")
                media = fields.first
                payloadType = fields.count > 3 ? Int(fields[3]).flatMap { (0...127).contains($0) ? $0 : nil } : nil
                (encoding, control, frameRate, parameterSets) = ("", "", nil, [[], [], [], []])
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
                if let rate = Double(value.trimmingSpaces), rate.isFinite, rate > 0.01, rate <= 1000 {
                    frameRate = rate
                } else {
                    problems.append("a frame rate of \(CameraText.quoted(value, limit: 24)) (ignored)")
                }
            case ("video", "fmtp"):
                readParameterSets(fmtp: value, into: &parameterSets)
            default: break
            }
        }
        finishVideo()
        if audioEncoding == nil, let audioPayloadType {
            // Static payload types need no rtpmap (RFC 3551).
            audioEncoding = [0: "pcm_mulaw", 8: "pcm_alaw", 14: "mp3"][audioPayloadType] ?? "audio (RTP payload type \(audioPayloadType))"
        }
    }

    /// The parameter sets of an `a=fmtp` line, base64 in `sprop-parameter-sets` (H.264) or
    /// `sprop-vps`/`sprop-sps`/`sprop-pps` (H.265), into their slots; what is wrong or over
    /// `RTSPLimits.parameterSetBytes` in all is left out and named in `problems`.
    private mutating func readParameterSets(fmtp value: Substring, into parameterSets: inout [[UInt8]]) {
        let parts = value.split(separator: " ", maxSplits: 1)
        guard parts.count == 2 else { return }
        for parameter in parts[1].split(separator: ";") {
            let pair = parameter.trimmingSpaces.split(separator: "=", maxSplits: 1, omittingEmptySubsequences: false)
            guard pair.count == 2 else { continue }
            let slot: Int
            switch pair[0].lowercased() {
            case "sprop-parameter-sets", "sprop-vps": slot = 0
            case "sprop-sps": slot = 1
            case "sprop-pps": slot = 2
            default: continue
            }
            if pair[1].split(separator: ",").isEmpty { problems.append("an empty \(pair[0]) (no parameter set; ignored)") }
            for set in pair[1].split(separator: ",") {
                guard let bytes = Base64.decode(set), !bytes.isEmpty else {
                    problems.append("a parameter set that is not base64: \(CameraText.quoted(set, limit: 24)) (ignored)")
                    continue
                }
                guard parameterSets.reduce(0, { $0 + $1.count }) + 4 + bytes.count <= RTSPLimits.parameterSetBytes else {
                    problems.append("parameter sets over \(RTSPLimits.parameterSetBytes) bytes (ignored)")
                    continue
                }
                parameterSets[slot] += [0, 0, 0, 1] + bytes
            }
        }
    }

    /// FFmpeg's name for an RTP audio encoding, as `vigil devices` shows codecs.
    static func codecName(rtpEncoding name: String) -> String {
        let names = ["pcma": "pcm_alaw", "pcmu": "pcm_mulaw", "mpeg4-generic": "aac", "mp4a-latm": "aac",
                     "l16": "pcm_s16be", "g722": "adpcm_g722", "g726-32": "adpcm_g726", "opus": "opus", "mpa": "mp3"]
        return names[name] ?? CameraText.quoted(name, limit: 24)
    }
}
