import Crypto
import CryptoExtras
import Foundation

/// A password's hash: scrypt (memory-hard: each guess costs an attacker `memoryBytes` as well as
/// time), with a 16-byte random salt, kept as `scrypt$LOG2N$R$P$SALT$HASH` (base64) so that a
/// later cost still reads the hashes made with this one.
///
/// The cost, N = 2^15, r = 8, p = 1: 32 MiB and about 0.1 s per hash on one core of a small
/// machine (the web server checks one password at a time, so logins never take more memory
/// than that). It is RFC 7914's interactive-login setting and OWASP's floor for scrypt at
/// p = 1 with 32 MiB; `vigil user passwd` re-hashes with whatever this file says then.
public struct PasswordHash: Sendable, Equatable {
    public var log2N: Int
    public var r: Int
    public var p: Int

    public static let standard = PasswordHash(log2N: 15, r: 8, p: 1)

    public init(log2N: Int, r: Int, p: Int) {
        self.log2N = log2N
        self.r = r
        self.p = p
    }

    public var memoryBytes: Int { 128 * r * (1 << log2N) }
    /// The most a stored form may make one check take (a row edited to N = 2^20, r = 32 would be 4 GiB).
    static let maxMemoryBytes = 256 << 20

    /// `password` hashed with a new salt, in the stored form.
    public func hash(_ password: String) throws -> String {
        var generator = SystemRandomNumberGenerator()
        let salt = Data((0..<16).map { _ in UInt8.random(in: .min ... .max, using: &generator) })
        let key = try derive(password, salt: salt)
        return "scrypt$\(log2N)$\(r)$\(p)$\(salt.base64EncodedString())$\(key.base64EncodedString())"
    }

    /// True when `password` is the one `stored` was made from. A stored form that cannot be
    /// read, or whose cost is outside sane bounds (a hand-edited row), never matches.
    public static func verify(_ password: String, against stored: String) -> Bool {
        let parts = stored.split(separator: "$", omittingEmptySubsequences: false)
        guard parts.count == 6, parts[0] == "scrypt", let log2N = Int(parts[1]), let r = Int(parts[2]), let p = Int(parts[3]),
              (10...20).contains(log2N), (1...32).contains(r), (1...16).contains(p),
              PasswordHash(log2N: log2N, r: r, p: p).memoryBytes <= maxMemoryBytes,
              let salt = Data(base64Encoded: String(parts[4])), let expected = Data(base64Encoded: String(parts[5])), expected.count == 32,
              let key = try? PasswordHash(log2N: log2N, r: r, p: p).derive(password, salt: salt)
        else { return false }
        return zip(key, expected).reduce(UInt8(0)) { $0 | ($1.0 ^ $1.1) } == 0
    }

    /// A hash of a password nobody has, to spend the same time on a name that does not exist
    /// as on a wrong password (so timing does not tell which names are users).
    public static let decoy: String = (try? standard.hash(AccessSecret.make())) ?? ""

    private func derive(_ password: String, salt: Data) throws -> Data {
        let key = try KDF.Scrypt.deriveKey(
            from: Data(password.utf8), salt: salt, outputByteCount: 32, rounds: 1 << log2N, blockSize: r, parallelism: p,
            maxMemory: memoryBytes * 2)
        return key.withUnsafeBytes { Data($0) }
    }
}
