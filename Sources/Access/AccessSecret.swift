import Crypto
import Foundation

/// The secrets Vigil hands out (API tokens, session ids) and how they are kept: 32 random bytes
/// in base64url, stored only as their SHA-256. A plain hash suffices here, unlike a password's:
/// 256 random bits cannot be guessed, so there is nothing for a slow hash to protect.
public enum AccessSecret {
    /// A new secret: 43 characters of base64url.
    public static func make() -> String {
        var generator = SystemRandomNumberGenerator()
        let bytes = (0..<32).map { _ in UInt8.random(in: .min ... .max, using: &generator) }
        return Data(bytes).base64EncodedString().replacingOccurrences(of: "+", with: "-").replacingOccurrences(of: "/", with: "_")
            .replacingOccurrences(of: "=", with: "")
    }

    /// The SHA-256 of `secret`, in lower-case hex: what the index keeps.
    public static func digest(_ secret: String) -> String {
        SHA256.hash(data: Data(secret.utf8)).map { String(format: "%02x", $0) }.joined()
    }
}
