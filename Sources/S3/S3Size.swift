/// A size an S3 service states (`Content-Length`, a listing's or a part's `Size`): decimal
/// digits only, at most S3's largest object. Anything else is the service's mistake, refused
/// before Vigil adds it to anything (two objects that claimed `Int64.max` bytes used to trap
/// `vigil archive rebuild-index`).
public enum S3Size {
    /// 5 TiB: the largest object S3 stores.
    public static let maxObjectBytes: Int64 = 5 << 40

    /// The size `text` states, or nil when it is not 0...`maxObjectBytes` in plain digits.
    public static func parse(_ text: String?) -> Int64? {
        guard let text, (1...13).contains(text.utf8.count), text.utf8.allSatisfy({ (0x30...0x39).contains($0) }),
              let bytes = Int64(text), bytes <= maxObjectBytes else { return nil }
        return bytes
    }
}
