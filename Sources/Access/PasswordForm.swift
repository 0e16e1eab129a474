import Foundation

/// A password hash as the index stores it, `scrypt$LOG2N$R$P$SALT$HASH` (salt and hash in
/// base64): read from a database row, so read strictly, with Foundation only (the
/// `password-form` fuzz target compiles this file alone). A cost outside sane bounds (a row
/// edited to N = 2^20, r = 32 would take 4 GiB per check) is no form at all.
struct PasswordForm: Equatable {
    var log2N: Int
    var r: Int
    var p: Int
    var salt: Data
    var hash: Data

    /// The most one check may take.
    static let maxMemoryBytes = 256 << 20

    var memoryBytes: Int { 128 * r * (1 << log2N) * p }

    init?(log2N: Int, r: Int, p: Int, salt: Data, hash: Data) {
        guard (10...20).contains(log2N), (1...32).contains(r), (1...16).contains(p), (8...64).contains(salt.count), hash.count == 32 else { return nil }
        self.log2N = log2N
        self.r = r
        self.p = p
        self.salt = salt
        self.hash = hash
        guard memoryBytes <= Self.maxMemoryBytes else { return nil }
    }

    init?(_ stored: String) {
        let parts = stored.split(separator: "$", omittingEmptySubsequences: false)
        guard stored.utf8.count <= 512, parts.count == 6, parts[0] == "scrypt",
              let log2N = Self.number(parts[1]), let r = Self.number(parts[2]), let p = Self.number(parts[3]),
              let salt = Data(base64Encoded: String(parts[4])), let hash = Data(base64Encoded: String(parts[5])) else { return nil }
        self.init(log2N: log2N, r: r, p: p, salt: salt, hash: hash)
    }

    var text: String { "scrypt$\(log2N)$\(r)$\(p)$\(salt.base64EncodedString())$\(hash.base64EncodedString())" }

    /// 1 to 2 digits, no sign.
    private static func number(_ text: Substring) -> Int? {
        guard (1...2).contains(text.count), text.utf8.allSatisfy({ (48...57).contains($0) }) else { return nil }
        return Int(text)
    }
}
