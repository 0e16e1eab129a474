import Foundation

/// Where recordings and stills live under a storage root. Names are in UTC so that they sort
/// chronologically and never repeat across daylight-saving changes:
///
///     ROOT/CAMERA/video/2026-11-22/CAMERA-20261122T065700Z.mp4
///     ROOT/CAMERA/stills/2026-11-22/CAMERA-20261122T065700Z.jpg
public struct RecordingPaths: Sendable {
    public let root: String
    public let cameraID: String

    public init(root: String, cameraID: String) {
        self.root = root
        self.cameraID = cameraID
    }

    /// The camera id as a file-name part: letters, digits, `.`, `_` and `-` only
    /// (`v4l2:usb-Logitech_C920_AB12-video-index0` → `v4l2-usb-Logitech_C920_AB12-video-index0`).
    public var cameraDirectory: String {
        String(cameraID.map { $0.isLetter || $0.isNumber || $0 == "." || $0 == "_" || $0 == "-" ? $0 : "-" })
    }

    public static let partialSuffix = ".partial"

    /// A segment file path for a segment starting at `wallNanos`; never an existing file.
    func segment(startingAt wallNanos: Int64, extension ext: String) throws -> String {
        try unusedPath(kind: "video", wallNanos: wallNanos, extension: ext)
    }

    /// The path of the still for the aligned instant `wallNanos`.
    func still(at wallNanos: Int64) throws -> String {
        try unusedPath(kind: "stills", wallNanos: wallNanos, extension: "jpg")
    }

    /// The path of an on-demand snapshot taken at `wallNanos` (`ROOT/CAMERA/snapshots/DAY/…jpg`).
    public func snapshot(at wallNanos: Int64) throws -> String {
        try unusedPath(kind: "snapshots", wallNanos: wallNanos, extension: "jpg")
    }

    private func unusedPath(kind: String, wallNanos: Int64, extension ext: String) throws -> String {
        let (day, stamp) = Self.utcStamp(wallNanos)
        let directory = "\(root)/\(cameraDirectory)/\(kind)/\(day)"
        try FileManager.default.createDirectory(atPath: directory, withIntermediateDirectories: true)
        var path = "\(directory)/\(cameraDirectory)-\(stamp).\(ext)"
        var n = 2
        // A camera restarted within the same second gets "_02", "_03", … rather than
        // overwriting; they sort after the first file of that second, in order.
        while FileManager.default.fileExists(atPath: path) || FileManager.default.fileExists(atPath: path + Self.partialSuffix) {
            path = "\(directory)/\(cameraDirectory)-\(stamp)_\(String(format: "%02d", n)).\(ext)"
            n += 1
        }
        return path
    }

    /// The UTC instant in a recording's file name (`CAM-20261122T065700Z[_02].ext`), nil if none.
    public static func wallNanos(fromFileName name: String) -> Int64? {
        let base = name.split(separator: ".").first.map(String.init) ?? name
        guard let dash = base.lastIndex(of: "-") else { return nil }
        let stamp = base[base.index(after: dash)...].prefix(16)
        let digits = stamp.filter(\.isNumber)
        guard stamp.count == 16, stamp.dropFirst(8).first == "T", stamp.last == "Z", digits.count == 14 else { return nil }
        let n = digits.map { Int(String($0))! }
        func number(_ r: Range<Int>) -> Int { r.reduce(0) { $0 * 10 + n[$1] } }
        var t = tm()
        t.tm_year = Int32(number(0..<4) - 1900)
        t.tm_mon = Int32(number(4..<6) - 1)
        t.tm_mday = Int32(number(6..<8))
        t.tm_hour = Int32(number(8..<10))
        t.tm_min = Int32(number(10..<12))
        t.tm_sec = Int32(number(12..<14))
        let seconds = timegm(&t)
        return seconds < 0 ? nil : Int64(seconds) * 1_000_000_000
    }

    /// ("2026-11-22", "20261122T065700Z") for an instant.
    public static func utcStamp(_ wallNanos: Int64) -> (day: String, stamp: String) {
        var t = time_t(wallNanos / 1_000_000_000)
        var tm = tm()
        gmtime_r(&t, &tm)
        let y = Int(tm.tm_year) + 1900, mo = Int(tm.tm_mon) + 1, d = Int(tm.tm_mday)
        let day = String(format: "%04d-%02d-%02d", y, mo, d)
        let stamp = String(format: "%04d%02d%02dT%02d%02d%02dZ", y, mo, d, Int(tm.tm_hour), Int(tm.tm_min), Int(tm.tm_sec))
        return (day, stamp)
    }
}

/// Durable file operations: data reaches the disk before a name says it is complete.
public enum DurableFile {
    /// fsyncs `path`, renames it to `finalPath` and fsyncs the directory (Moonfire's protocol).
    public static func commit(_ path: String, to finalPath: String) throws {
        try sync(path)
        guard rename(path, finalPath) == 0 else { throw POSIXError(errno, "rename \(path)") }
        try sync(directory(of: finalPath))
    }

    /// The directory holding `path`: "." for a bare file name such as `clip.mp4`.
    static func directory(of path: String) -> String {
        let directory = (path as NSString).deletingLastPathComponent
        return directory.isEmpty ? "." : directory
    }

    static func sync(_ path: String) throws {
        let fd = open(path, O_RDONLY)
        guard fd >= 0 else { throw POSIXError(errno, "open \(path)") }
        defer { close(fd) }
        guard fsync(fd) == 0 else { throw POSIXError(errno, "fsync \(path)") }
    }

    /// Writes `bytes` to `path` atomically (temporary file, fsync, rename).
    public static func write(_ bytes: UnsafeRawBufferPointer, to path: String) throws {
        let temporary = path + RecordingPaths.partialSuffix
        let fd = open(temporary, O_WRONLY | O_CREAT | O_TRUNC | O_CLOEXEC, 0o666)  // the process umask decides who may read
        guard fd >= 0 else { throw POSIXError(errno, "create \(temporary)") }
        var written = 0
        while written < bytes.count {
            let n = Glibc.write(fd, bytes.baseAddress! + written, bytes.count - written)
            if n < 0 {
                let e = errno
                if e == EINTR { continue }
                close(fd)
                unlink(temporary)
                throw POSIXError(e, "write \(temporary)")
            }
            written += n
        }
        close(fd)
        try commit(temporary, to: path)
    }
}

/// An errno with the operation that failed, e.g. "write /x: No space left on device".
struct POSIXError: Error, CustomStringConvertible {
    let code: Int32
    let operation: String
    init(_ code: Int32, _ operation: String) {
        self.code = code
        self.operation = operation
    }
    var description: String { "\(operation): \(String(cString: strerror(code)))" }
    var isDiskFull: Bool { code == ENOSPC || code == EDQUOT }
}
