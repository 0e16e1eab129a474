import Foundation

/// Every path under a storage root, in one place. Recording names are in UTC so that they sort
/// chronologically and never repeat across daylight-saving changes:
///
///     ROOT/vigil-index.sqlite3                                the index (and its -wal, -shm)
///     ROOT/vigil-index.sqlite3.corrupt-STAMP                  a damaged index, moved aside
///     ROOT/CAMERA/video/2026-11-22/CAMERA-20261122T065700Z.mp4
///     ROOT/CAMERA/stills/2026-11-22/CAMERA-20261122T065700Z.jpg
///     ROOT/CAMERA/snapshots/2026-11-22/CAMERA-20261122T065700Z.jpg
///     ROOT/CAMERA/timelapse/CAMERA-2026-11-22.mp4            a daily timelapse video (local day)
///     ROOT/CAMERA/events/2026-11-22/CAMERA-20261122T065700Z.jpg  a motion event's picture (its start)
///     ROOT/.quarantine/CAMERA/…                               unplayable leftovers, same path below it
///
/// The index stores paths relative to the root; `absolute` and `relative` convert.
public struct StorageLayout: Sendable {
    /// The folders under `ROOT/CAMERA/`, one per kind of file Vigil writes.
    public static let videoFolder = "video", stillsFolder = "stills", snapshotsFolder = "snapshots", timelapseFolder = "timelapse"
    /// Motion events' pictures (listed in the index's `motion_events`, not among recordings).
    public static let eventsFolder = "events"
    /// Where unplayable leftovers are moved, below the root.
    public static let quarantineFolder = ".quarantine"
    /// The SQLite index, directly under the root.
    public static let indexFileName = "vigil-index.sqlite3"
    public static let partialSuffix = ".partial"

    public let root: String

    public init(root: String) {
        self.root = root
    }

    /// `ROOT/relative` for a path the index stores.
    public func absolute(_ relative: String) -> String { "\(root)/\(relative)" }

    /// The media type of a recording by its extension (served, and stored with its archived object).
    public static func contentType(_ path: String) -> String {
        switch (path as NSString).pathExtension.lowercased() {
        case "mp4": return "video/mp4"
        case "mkv": return "video/x-matroska"
        case "jpg", "jpeg": return "image/jpeg"
        default: return "application/octet-stream"
        }
    }

    /// The path below the root of `path` (unchanged when it is not under the root).
    public func relative(_ path: String) -> String {
        path.hasPrefix(root + "/") ? String(path.dropFirst(root.count + 1)) : path
    }

    // MARK: - The index

    public var indexPath: String { absolute(Self.indexFileName) }

    /// SQLite's companions of the index file in WAL mode.
    public var indexWALPath: String { indexPath + "-wal" }
    public var indexSharedMemoryPath: String { indexPath + "-shm" }

    /// Room only the index may use on a full disk (`IndexReserve`): a file of allocated blocks,
    /// given up when an index write finds the disk full and made again once there is room.
    public var indexReservePath: String { absolute(".vigil-index-reserve") }

    /// Where a damaged index is moved aside, named by the UTC time it was found (`stamp`).
    public func damagedIndexPath(stamp: String) -> String { "\(indexPath).corrupt-\(stamp)" }

    // MARK: - The quarantine

    /// The path below the root where the leftover at `relative` is kept; `attempt` > 1 adds a
    /// suffix when that name is taken.
    public static func quarantined(_ relative: String, attempt: Int = 1) -> String {
        "\(quarantineFolder)/\(relative)" + (attempt > 1 ? ".\(attempt)" : "")
    }

    // MARK: - A camera's files

    /// The camera id as a folder and file-name part: letters, digits, `.`, `_` and `-` only
    /// (`v4l2:usb-Logitech_C920_AB12-video-index0` → `v4l2-usb-Logitech_C920_AB12-video-index0`).
    public static func cameraFolder(_ cameraID: String) -> String {
        String(cameraID.map { $0.isLetter || $0.isNumber || $0 == "." || $0 == "_" || $0 == "-" ? $0 : "-" })
    }

    /// `ROOT/CAMERA/stills`: one folder per UTC day below it.
    public func stillsDirectory(camera cameraID: String) -> String {
        absolute("\(Self.cameraFolder(cameraID))/\(Self.stillsFolder)")
    }

    /// A segment file path for a segment starting at `wallNanos`; never an existing file.
    func segment(camera cameraID: String, startingAt wallNanos: Int64, extension ext: String) throws -> String {
        try unusedPath(camera: cameraID, kind: Self.videoFolder, wallNanos: wallNanos, extension: ext)
    }

    /// The path of the still for the aligned instant `wallNanos`.
    func still(camera cameraID: String, at wallNanos: Int64) throws -> String {
        try unusedPath(camera: cameraID, kind: Self.stillsFolder, wallNanos: wallNanos, extension: "jpg")
    }

    /// The path of an on-demand snapshot taken at `wallNanos` (`ROOT/CAMERA/snapshots/DAY/…jpg`).
    public func snapshot(camera cameraID: String, at wallNanos: Int64) throws -> String {
        try unusedPath(camera: cameraID, kind: Self.snapshotsFolder, wallNanos: wallNanos, extension: "jpg")
    }

    /// The path of the picture of the motion event that started at `wallNanos`.
    func eventPicture(camera cameraID: String, at wallNanos: Int64) throws -> String {
        try unusedPath(camera: cameraID, kind: Self.eventsFolder, wallNanos: wallNanos, extension: "jpg")
    }

    /// The path of the daily timelapse video of the local day `label` (`YYYY-MM-DD`); creates its folder.
    public func dailyVideo(camera cameraID: String, day label: String) throws -> String {
        let folder = Self.cameraFolder(cameraID)
        let directory = absolute("\(folder)/\(Self.timelapseFolder)")
        try FileManager.default.createDirectory(atPath: directory, withIntermediateDirectories: true)
        return "\(directory)/\(folder)-\(label).mp4"
    }

    private func unusedPath(camera cameraID: String, kind: String, wallNanos: Int64, extension ext: String) throws -> String {
        let (day, stamp) = Self.utcStamp(wallNanos)
        let folder = Self.cameraFolder(cameraID)
        let directory = absolute("\(folder)/\(kind)/\(day)")
        try FileManager.default.createDirectory(atPath: directory, withIntermediateDirectories: true)
        var path = "\(directory)/\(folder)-\(stamp).\(ext)"
        var n = 2
        // A camera restarted within the same second gets "_02", "_03", … rather than
        // overwriting; they sort after the first file of that second, in order.
        while FileManager.default.fileExists(atPath: path) || FileManager.default.fileExists(atPath: path + Self.partialSuffix) {
            path = "\(directory)/\(folder)-\(stamp)_\(String(format: "%02d", n)).\(ext)"
            n += 1
        }
        return path
    }

    // MARK: - Names

    /// The UTC instant in a recording's file name (`CAM-20261122T065700Z[_02].ext`), nil if none.
    public static func wallNanos(fromFileName name: String) -> Int64? {
        RecordingFileName(name)?.wallNanos
    }

    /// The UTC instant of a `YYYYMMDDTHHMMSSZ` stamp, or of the UTC midnight of a `YYYY-MM-DD`
    /// day; nil if `text` is neither, names no real date, or one outside `WallTime.range`.
    static func wallNanos(stamp text: Substring) -> Int64? {
        stampSeconds(text).flatMap(WallTime.nanos(wholeSeconds:))
    }

    /// The seconds since 1970 of a stamp (as `wallNanos(stamp:)` reads it), whatever the year:
    /// nil if `text` is not a stamp of a real date.
    static func stampSeconds(_ text: Substring) -> Int64? {
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
        guard wanted == (t.tm_year, t.tm_mon, t.tm_mday, t.tm_hour, t.tm_min, t.tm_sec) else { return nil }
        return Int64(seconds)
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
    /// The camera part (`StorageLayout.cameraFolder` of the camera that wrote it).
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
        guard let parts = Self.parse(name), let wall = WallTime.nanos(wholeSeconds: parts.seconds) else { return nil }
        (camera, wallNanos, sequence, fileExtension, isPartial, isDaily) = (parts.camera, wall, parts.sequence, parts.fileExtension, parts.isPartial, parts.isDaily)
    }

    /// True when `name` is shaped like a recording's and names a real date, but one outside
    /// `WallTime.range` (a file named for 2263): Vigil did not write it and cannot index it.
    public static func namesATimeOutOfRange(_ name: String) -> Bool {
        guard let parts = parse(name) else { return false }
        return WallTime.nanos(wholeSeconds: parts.seconds) == nil
    }

    private static func parse(_ name: String) -> (camera: String, seconds: Int64, sequence: Int, fileExtension: String, isPartial: Bool, isDaily: Bool)? {
        var rest = Substring(name)
        let isPartial = rest.hasSuffix(StorageLayout.partialSuffix)
        if isPartial { rest = rest.dropLast(StorageLayout.partialSuffix.count) }
        guard let dot = rest.lastIndex(of: ".") else { return nil }
        let fileExtension = String(rest[rest.index(after: dot)...])
        guard !fileExtension.isEmpty, fileExtension.allSatisfy({ $0.isLetter || $0.isNumber }) else { return nil }
        rest = rest[..<dot]
        var sequence = 1
        if let underscore = rest.lastIndex(of: "_"), rest[..<underscore].hasSuffix("Z"),
           case let digits = rest[rest.index(after: underscore)...], digits.count >= 2, digits.allSatisfy(\.isASCII), digits.allSatisfy(\.isNumber),
           let n = Int(digits), n >= 2 {
            sequence = n
            rest = rest[..<underscore]
        }
        for length in [16, 10] where rest.count > length + 1 {
            let stamp = rest.suffix(length)
            let camera = rest.dropLast(length)
            guard camera.hasSuffix("-"), let seconds = StorageLayout.stampSeconds(stamp) else { continue }
            guard length == 16 || sequence == 1 else { return nil }
            return (String(camera.dropLast()), seconds, sequence, fileExtension, isPartial, length == 10)
        }
        return nil
    }
}
