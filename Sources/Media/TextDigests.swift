internal import CFFmpeg

/// Base64 and MD5 as network protocols use them (RTSP's Basic and Digest authentication, the
/// parameter sets in an SDP), through libavutil rather than a crypto package.
public enum TextDigests {
    /// MD5 of `text`'s UTF-8 bytes, as 32 lowercase hexadecimal digits (RFC 2617).
    public static func md5Hex(_ text: String) -> String {
        var digest = [UInt8](repeating: 0, count: 16)
        var utf8 = Array(text.utf8)
        av_md5_sum(&digest, &utf8, utf8.count)
        let digits = Array("0123456789abcdef".utf8)
        var hex = [UInt8]()
        hex.reserveCapacity(32)
        for byte in digest {
            hex.append(digits[Int(byte >> 4)])
            hex.append(digits[Int(byte & 15)])
        }
        return String(decoding: hex, as: UTF8.self)
    }

    public static func base64(_ bytes: [UInt8]) -> String {
        var out = [CChar](repeating: 0, count: (bytes.count + 2) / 3 * 4 + 1)
        var input = bytes
        guard av_base64_encode(&out, Int32(out.count), &input, Int32(input.count)) != nil else { return "" }
        return String(decoding: out.prefix { $0 != 0 }.map { UInt8(bitPattern: $0) }, as: UTF8.self)
    }

    /// The bytes `text` encodes, or nil when it is not base64.
    public static func bytes(base64 text: String) -> [UInt8]? {
        var input = Array(text.utf8CString)
        var out = [UInt8](repeating: 0, count: text.utf8.count * 3 / 4 + 3)
        let count = av_base64_decode(&out, &input, Int32(out.count))
        guard count >= 0 else { return nil }
        return Array(out.prefix(Int(count)))
    }
}
