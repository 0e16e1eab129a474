import SystemPackage
import Foundation

/// Where recordings and stills live under a storage root. Names are in UTC so that they sort
/// chronologically and never repeat across daylight-saving changes:
///
///     ROOT/CAMERA/video/2026-11-22/CAMERA-20261122T065700Z.mp4
///     ROOT/CAMERA/stills/2026-11-22/CAMERA-20261122T065700Z.jpg
///     ROOT/CAMERA/snapshots/2026-11-22/CAMERA-20261122T065700Z.jpg
///     ROOT/CAMERA/timelapse/CAMERA-2026-11-22.mp4          (a daily timelapse video, local day)
public struct RecordingPaths: Sendable {
    /// The folders under `ROOT/CAMERA/`, one per kind of file Vigil writes.
    public static let videoFolder = "video", stillsFolder = "stills", snapshotsFolder = "snapshots", timelapseFolder = "timelapse"

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
        try unusedPath(kind: Self.videoFolder, wallNanos: wallNanos, extension: ext)
    }

    /// The path of the still for the aligned instant `wallNanos`.
    func still(at wallNanos: Int64) throws -> String {
        try unusedPath(kind: Self.stillsFolder, wallNanos: wallNanos, extension: "jpg")
    }

    /// The path of an on-demand snapshot taken at `wallNanos` (`ROOT/CAMERA/snapshots/DAY/…jpg`).
    public func snapshot(at wallNanos: Int64) throws -> String {
        try unusedPath(kind: Self.snapshotsFolder, wallNanos: wallNanos, extension: "jpg")
    }

    /// The path of the daily timelapse video of the local day `label` (`YYYY-MM-DD`); creates its folder.
    public func dailyVideo(day label: String) throws -> String {
        let directory = "\(root)/\(cameraDirectory)/\(Self.timelapseFolder)"
        try FileManager.default.createDirectory(atPath: directory, withIntermediateDirectories: true)
        return "\(directory)/\(cameraDirectory)-\(label).mp4"
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
        RecordingFileName(name)?.wallNanos
    }

    /// The UTC instant of a `YYYYMMDDTHHMMSSZ` stamp, or of the UTC midnight of a `YYYY-MM-DD`
    /// day; nil if `text` is neither or names no real date.
    static func wallNanos(stamp text: Substring) -> Int64? {
        let chars = Array(text.utf8)
        let isStamp = chars.count == 16 && chars[8] == UInt8(ascii: "T") && chars[15] == UInt8(ascii: "Z")
        let isDay = chars.count == 10 && chars[4] == UInt8(ascii: "-") && chars[7] == UInt8(ascii: "-")
        guard isStamp || isDay else { return nil }
        let digits = chars.filter { $0 != UInt8(ascii: "T") && $0 != UInt8(ascii: "Z") && $0 != UInt8(ascii: "-") }
        guard digits.count == (isStamp ? 14 : 8), digits.allSatisfy({ $0 >= 48 && $0 <= 57 }) else { return nil }
        let n = digits.map { Int($0) - 48 } + (isStamp ? [] : [0, 0, 0, 0, 0, 0])
        func number(_ r: Range<Int>) -> Int32 { Int32(r.reduce(0) { $0 * 10 + n[$1] }) }
        var t = tm()
        t.tm_year = number(0..<4) - 1900
        t.tm_mon = number(4..<6) - 1
        t.tm_mday = number(6..<8)
        t.tm_hour = number(8..<10)
        t.tm_min = number(10..<12)
        t.tm_sec = number(12..<14)
        let wanted = (t.tm_year, t.tm_mon, t.tm_mday, t.tm_hour, t.tm_min, t.tm_sec)
        let seconds = timegm(&t)
        // timegm normalises 2026-02-30 into March: such a name is not one Vigil wrote.
        guard seconds >= 0, wanted == (t.tm_year, t.tm_mon, t.tm_mday, t.tm_hour, t.tm_min, t.tm_sec) else { return nil }
        return Int64(seconds) * 1_000_000_000
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

/// A recording's file name taken apart: `CAMERA-20261122T065700Z[_02].EXT[.partial]`, or a daily
/// timelapse video's `CAMERA-2026-11-22.mp4`. Read from the end, because a camera id may hold
/// dots and dashes (`pci-0000-00-14.0-usb-0-1-1.0`). The one parser of recording names.
public struct RecordingFileName: Sendable, Equatable {
    /// The camera part (`RecordingPaths.cameraDirectory` of the camera that wrote it).
    public let camera: String
    /// The UTC instant in the name; for a daily video, the UTC midnight of its day's date.
    public let wallNanos: Int64
    /// 1 for the first file of a second, 2 for `_02`, …
    public let sequence: Int
    /// Without the dot: `mp4`, `mkv`, `jpg`.
    public let fileExtension: String
    /// The file is still being written (or was, when a crash stopped it).
    public let isPartial: Bool
    /// A daily timelapse video, named by its day rather than an instant.
    public let isDaily: Bool

    public init?(_ name: String) {
        var rest = Substring(name)
        isPartial = rest.hasSuffix(RecordingPaths.partialSuffix)
        if isPartial { rest = rest.dropLast(RecordingPaths.partialSuffix.count) }
        guard let dot = rest.lastIndex(of: ".") else { return nil }
        fileExtension = String(rest[rest.index(after: dot)...])
        guard !fileExtension.isEmpty, fileExtension.allSatisfy({ $0.isLetter || $0.isNumber }) else { return nil }
        rest = rest[..<dot]
        var sequence = 1
        if let underscore = rest.lastIndex(of: "_"), rest[..<underscore].hasSuffix("Z"),
           case let digits = rest[rest.index(after: underscore)...], digits.count >= 2, digits.allSatisfy(\.isASCII), digits.allSatisfy(\.isNumber),
           let n = Int(digits), n >= 2 {
            sequence = n
            rest = rest[..<underscore]
        }
        self.sequence = sequence
        for length in [16, 10] where rest.count > length + 1 {
            let stamp = rest.suffix(length)
            let camera = rest.dropLast(length)
            guard camera.hasSuffix("-"), let wall = RecordingPaths.wallNanos(stamp: stamp) else { continue }
            guard length == 16 || sequence == 1 else { return nil }
            self.camera = String(camera.dropLast())
            self.wallNanos = wall
            self.isDaily = length == 10
            return
        }
        return nil
    }
}

/// Durable file operations: data reaches the disk before a name says it is complete.
public enum DurableFile {
    /// fsyncs `path`, renames it to `finalPath` and fsyncs the directory (Moonfire's protocol).
    public static func commit(_ path: String, to finalPath: String) throws {
        try sync(path)
        guard rename(path, finalPath) == 0 else { throw CaptureError.file(operation: "rename", path: path, errno: Errno(rawValue: errno)) }
        try sync(directory(of: finalPath))
    }

    /// The directory holding `path`: "." for a bare file name such as `clip.mp4`.
    static func directory(of path: String) -> String {
        let directory = (path as NSString).deletingLastPathComponent
        return directory.isEmpty ? "." : directory
    }

    static func sync(_ path: String) throws {
        let fd = open(path, O_RDONLY)
        guard fd >= 0 else { throw CaptureError.file(operation: "open", path: path, errno: Errno(rawValue: errno)) }
        defer { close(fd) }
        guard fsync(fd) == 0 else { throw CaptureError.file(operation: "fsync", path: path, errno: Errno(rawValue: errno)) }
    }

    /// Writes `bytes` to `path` atomically (temporary file, fsync, rename).
    public static func write(_ bytes: UnsafeRawBufferPointer, to path: String) throws {
        let temporary = path + RecordingPaths.partialSuffix
        let fd = open(temporary, O_WRONLY | O_CREAT | O_TRUNC | O_CLOEXEC, 0o666)  // the process umask decides who may read
        guard fd >= 0 else { throw CaptureError.file(operation: "create", path: temporary, errno: Errno(rawValue: errno)) }
        var written = 0
        while written < bytes.count {
            let n = Glibc.write(fd, bytes.baseAddress! + written, bytes.count - written)
            if n < 0 {
                let e = errno
                if e == EINTR { continue }
                close(fd)
                unlink(temporary)
                throw CaptureError.file(operation: "write", path: temporary, errno: Errno(rawValue: e))
            }
            written += n
        }
        close(fd)
        try commit(temporary, to: path)
    }
}
