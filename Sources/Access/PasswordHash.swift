import Crypto
import CryptoExtras
import Foundation

/// A password's hash: scrypt (memory-hard: each guess costs an attacker `memoryBytes` as well as
/// time), with a 16-byte random salt, kept as `PasswordForm` says, so that a later cost still
/// reads the hashes made with this one.
///
/// The cost, N = 2^15, r = 8, p = 1: 32 MiB and 0.38 s per hash (a debug build on one core of
/// a 2-core machine; the web server checks one password at a time, so logins never take more
/// memory than that). It is RFC 7914's interactive-login setting and OWASP's floor for scrypt at
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

    /// `password` hashed with a new salt, in the stored form.
    public func hash(_ password: String) throws -> String {
        let salt = AccessSecret.randomBytes(16)
        guard let form = PasswordForm(log2N: log2N, r: r, p: p, salt: salt, hash: Data(count: 32)) else { throw CostError() }
        var hashed = form
        hashed.hash = try Self.derive(password, form)
        return hashed.text
    }

    /// True when `password` is the one `stored` was made from. A stored form that cannot be
    /// read, or whose cost is outside `PasswordForm`'s bounds (a hand-edited row), never matches.
    public static func verify(_ password: String, against stored: String) -> Bool {
        guard let form = PasswordForm(stored), let key = try? derive(password, form) else { return false }
        return zip(key, form.hash).reduce(UInt8(0)) { $0 | ($1.0 ^ $1.1) } == 0
    }

    /// A hash of a password nobody has, to spend the same time on a name that does not exist
    /// as on a wrong password (so timing does not tell which names are users).
    public static let decoy: String = (try? standard.hash(AccessSecret.make())) ?? ""

    struct CostError: Error, CustomStringConvertible {
        var description: String { "a password hash's cost is outside what Vigil accepts" }
    }

    private static func derive(_ password: String, _ form: PasswordForm) throws -> Data {
        let key = try KDF.Scrypt.deriveKey(
            from: Data(password.utf8), salt: form.salt, outputByteCount: 32, rounds: 1 << form.log2N, blockSize: form.r,
            parallelism: form.p, maxMemory: form.memoryBytes * 2)
        return key.withUnsafeBytes { Data($0) }
    }
}
