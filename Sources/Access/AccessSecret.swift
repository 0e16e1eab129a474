import Crypto
import Foundation

/// The secrets Vigil hands out (API tokens, session ids) and how they are kept: 32 random bytes
/// in base64url, stored only as their SHA-256. A plain hash suffices here, unlike a password's:
/// 256 random bits cannot be guessed, so there is nothing for a slow hash to protect.
public enum AccessSecret {
    /// A new secret: 43 characters of base64url.
    public static func make() -> String {
        randomBytes(32).base64EncodedString().replacingOccurrences(of: "+", with: "-").replacingOccurrences(of: "/", with: "_")
            .replacingOccurrences(of: "=", with: "")
    }

    /// `count` bytes from the system's generator (secrets, and passwords' salts).
    static func randomBytes(_ count: Int) -> Data {
        var generator = SystemRandomNumberGenerator()
        return Data((0..<count).map { _ in UInt8.random(in: .min ... .max, using: &generator) })
    }

    /// The SHA-256 of `secret`, in lower-case hex: what the index keeps.
    /// Every request with a token or cookie asks it: hex by table, not a formatted string per byte.
    public static func digest(_ secret: String) -> String {
        let digits = Array("0123456789abcdef".utf8)
        var hex: [UInt8] = []
        hex.reserveCapacity(64)
        for byte in SHA256.hash(data: Data(secret.utf8)) {
            hex.append(digits[Int(byte >> 4)])
            hex.append(digits[Int(byte & 0x0F)])
        }
        return String(decoding: hex, as: UTF8.self)
    }
}
