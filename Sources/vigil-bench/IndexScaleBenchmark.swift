import Capture
import CaptureTesting
import Foundation
import Plumbing
import Recorder
import Synchronization

/// What `vigil-bench index-scale` is asked for (issue 30, item 6: a site's index at scale).
struct IndexScaleOptions: BenchOptions {
    /// The index engine measured: a node's SQLite file, or the cluster's PostgreSQL catalogue
    /// (`PostgresIndexScale`), by the same steps.
    enum Backend: String, CaseIterable { case sqlite, postgresql }

    var cameras = 64
    var days = 30
    var backend = Backend.sqlite

    static let usage = "index-scale [--cameras N (1-1000, default 64)] [--days N (1-3660, default 30; 365: a year)] [--backend sqlite|postgresql]"

    mutating func take(_ flag: String, _ value: String) throws -> Bool {
        switch flag {
        case "--cameras": cameras = try wholeNumber(flag, value, in: 1...1000)
        case "--days": days = try wholeNumber(flag, value, in: 1...3660)
        case "--backend":
            guard let b = Backend(rawValue: value) else {
                throw BenchUsageError("--backend: \(value) is not measured here (known: \(Backend.allCases.map(\.rawValue).joined(separator: ", ")))")
            }
            backend = b
        default: return false
        }
        return true
    }
}

/// A site's index at scale: `cameras` cameras recording 1-minute segments for `days` days (each
/// camera misses one minute a day, so every day holds one gap), written into a real index,
/// then what the page and `vigil recordings` ask of it timed: one camera's day listed, and a
/// month of one camera's gaps. Times are of `RecordingsListing`, which the API and the command
/// both build.
func indexScaleBenchmark(_ options: IndexScaleOptions) throws {
    let rows = options.cameras * options.days * IndexScaleBenchmark.segmentsPerCameraDay
    let bytesPerRow = options.backend == .sqlite ? IndexScaleBenchmark.bytesPerRowOnDisk : PostgresIndexScale.bytesPerRowOnDisk
    let needed = Int64(rows) * Int64(bytesPerRow) + IndexScaleBenchmark.headroomBytes
    let free = try IndexScaleBenchmark.freeBytes("/tmp")
    guard free >= needed else {
        throw BenchUsageError(String(format: "%ld rows need about %.1f GB free under %@ (the index and its journal); there are %.1f GB",
                                     rows, Double(needed) / 1e9, "/tmp", Double(free) / 1e9))
    }
    let bench = IndexScaleBenchmark(cameras: options.cameras, days: options.days)
    switch options.backend {
    case .sqlite: try sqliteIndexScale(bench, rows: rows)
    case .postgresql:
        // Its catalogue's calls block their thread, and refuse one of Swift concurrency's (this is
        // called from main.swift's top level, which is a task).
        try onThreadOfItsOwn { try PostgresIndexScale(bench: bench).run(rows: rows) }
    }
}

/// The SQLite case: a real index file under /tmp, written as a recorder writes it.
func sqliteIndexScale(_ bench: IndexScaleBenchmark, rows: Int) throws {
    let dir = try TemporaryDirectory("vigil-bench-index-scale")
    defer { dir.remove() }
    print("index at scale (sqlite): \(bench.cameras) cameras × \(bench.days) days of 1-minute segments = \(rows) rows, in \(dir.path)")
    // Written, then closed (SQLite folds its journal into the file), then opened again to be read.
    let insertSeconds = try bench.fill(RecordingIndex(root: dir.path), rows: rows)
    print(String(format: "insert: %.0f rows/s (%ld rows in %.1f s, one transaction per day of the site)", Double(rows) / insertSeconds, rows, insertSeconds))
    let indexPath = StorageLayout(root: dir.path).indexPath
    let size = (try FileManager.default.attributesOfItem(atPath: indexPath)[.size] as? NSNumber)?.int64Value ?? 0
    print(String(format: "index file: %.1f MB (%.0f bytes a row)", Double(size) / 1e6, Double(size) / Double(rows)))

    let index = try RecordingIndex(root: dir.path)
    try bench.timeListings { camera, from, to in
        try RecordingsListing(index: index, camera: camera, kind: .segment, from: from, to: to, timeZone: IndexScaleBenchmark.utc)
    }
}

/// Runs `body` on a thread of its own and waits for it.
func onThreadOfItsOwn(_ body: @escaping @Sendable () throws -> Void) throws {
    let outcome = Mutex<Result<Void, any Error>>(.success(()))
    let done = DispatchSemaphore(value: 0)
    Thread {
        let result = Result { try body() }
        outcome.withLock { $0 = result }
        done.signal()
    }.start()
    done.wait()
    try outcome.withLock { $0 }.get()
}

struct IndexScaleBenchmark {
    /// What a row of 1-minute segments takes in the index file, rounded up from the measured
    /// 30-day run, for the free-space check.
    static let bytesPerRowOnDisk = 260
    /// Room for the write-ahead log and SQLite's temporary files on top of the rows.
    static let headroomBytes: Int64 = 2_000_000_000
    static let first = Int64(1_767_225_600) * 1_000_000_000  // 2026-01-01T00:00:00Z
    static let minuteNanos: Int64 = 60_000_000_000
    static let dayNanos: Int64 = 86_400_000_000_000
    static let segmentsPerCameraDay = 1440 - 1
    /// A segment's length: a minute less a frame at 30 fps.
    static let segmentNanos = minuteNanos - 33_333_333
    static let utc = TimeZone(identifier: "UTC")!
    /// Each minute of a day as a file name's time.
    static let clock = (0..<1440).map { String(format: "T%02d%02d00Z", $0 / 60, $0 % 60) }
    /// `missingMinute`'s factors, which `PostgresIndexScale` writes into SQL.
    static let missingDayFactor = 7919, missingCameraFactor = 104_729, missingRange = 1438

    let cameras: Int
    let days: Int

    func camera(_ n: Int) -> String { String(format: "cam%03d", n) }

    /// The minute of `day` that `camera` has no segment for: never the first or last, so each
    /// day's gap is inside the day.
    func missingMinute(camera: Int, day: Int) -> Int {
        1 + (day &* Self.missingDayFactor &+ camera &* Self.missingCameraFactor) % Self.missingRange
    }

    /// A day's start and its folder's names (`2026-01-01`, `20260101`).
    struct Day {
        let start: Int64
        let folder: String
        let compact: String

        init(_ day: Int) {
            start = IndexScaleBenchmark.first + Int64(day) * IndexScaleBenchmark.dayNanos
            folder = StorageLayout.utcStamp(start).day
            compact = folder.replacingOccurrences(of: "-", with: "")
        }
    }

    /// The complete 1-minute segment of camera `name` at `minute` of `day`, as a recorder indexes it.
    func segment(_ name: String, _ day: Day, minute: Int) -> RecordingIndex.Entry {
        let start = day.start + Int64(minute) * Self.minuteNanos
        return RecordingIndex.Entry(
            kind: .segment, camera: name, path: "\(name)/video/\(day.folder)/\(name)-\(day.compact)\(Self.clock[minute]).mp4",
            startNanos: start, endNanos: start + Self.segmentNanos, frames: 1800, bytes: 4_000_000,
            codec: "h264", width: 1920, height: 1080, state: .complete)
    }

    /// Writes every segment in time order, as the cameras would (each minute, every camera's
    /// segment), one transaction per day; returns the seconds it took.
    func fill(_ index: RecordingIndex, rows: Int) throws -> Double {
        let names = (0..<cameras).map(camera)
        return try writeDays(rows: rows) { day in
            let today = Day(day)
            let missing = (0..<cameras).map { missingMinute(camera: $0, day: day) }
            try index.transaction {
                for minute in 0..<1440 {
                    for (n, name) in names.enumerated() where missing[n] != minute {
                        try index.put(segment(name, today, minute: minute))
                    }
                }
            }
        }
    }

    /// Calls `write` for each day in order, saying how far it got every 10 s on standard error;
    /// returns the seconds it took.
    func writeDays(rows: Int, _ write: (Int) throws -> Void) throws -> Double {
        let t0 = SystemClocks.monotonicNanos()
        var lastReport = t0
        for day in 0..<days {
            try write(day)
            let now = SystemClocks.monotonicNanos()
            if now - lastReport > 10_000_000_000 {
                lastReport = now
                let seconds = Double(now - t0) / 1e9
                let written = cameras * (day + 1) * Self.segmentsPerCameraDay
                FileHandle.standardError.write(Data(String(
                    format: "  day %ld/%ld: %ld of %ld rows, %.0f rows/s, %.0f s so far\n", day + 1, days, written, rows, Double(written) / seconds, seconds).utf8))
            }
        }
        return Double(SystemClocks.monotonicNanos() - t0) / 1e9
    }

    /// A camera's listing from `from` to `to` as the page reads it.
    typealias Lister = (_ camera: String, _ from: Int64, _ to: Int64) throws -> RecordingsListing

    /// Times one camera's day listed with its gaps (25 random days) and a month's gaps (7 random
    /// months), and prints both; the same seed each time, so two calls list the same windows.
    func timeListings(_ list: Lister) throws {
        var random = SeededRandom(seed: 30)
        let day = try time(samples: 25, using: &random, days: 1, expectedEntries: Self.segmentsPerCameraDay, expectedGaps: 1, list)
        print(String(format: "one camera's day listed with its gaps (%ld rows): median %.2f ms, max %.2f ms over %ld random days (goal < 20 ms)",
                     Self.segmentsPerCameraDay, day.median, day.max, day.count))
        let monthDays = min(30, days)
        let month = try time(samples: 7, using: &random, days: monthDays, expectedEntries: monthDays * Self.segmentsPerCameraDay, expectedGaps: monthDays, list)
        print(String(format: "a month's gaps of one camera (%ld days, %ld gaps): median %.1f ms, max %.1f ms over %ld random months (goal < 100 ms)",
                     monthDays, monthDays, month.median, month.max, month.count))
    }

    /// Lists `samples` random windows of `days` whole days of one random camera and times
    /// each, checking the listing holds the rows and gaps that were written.
    func time(samples: Int, using random: inout SeededRandom, days window: Int, expectedEntries: Int, expectedGaps: Int,
              _ list: Lister) throws -> (median: Double, max: Double, count: Int) {
        var millis: [Double] = []
        for _ in 0..<samples {
            let name = camera(Int.random(in: 0..<cameras, using: &random))
            let from = Self.first + Int64(Int.random(in: 0...(days - window), using: &random)) * Self.dayNanos
            let to = from + Int64(window) * Self.dayNanos - 1
            let t0 = SystemClocks.monotonicNanos()
            let listing = try list(name, from, to)
            let gaps = listing.gaps.count
            millis.append(Double(SystemClocks.monotonicNanos() - t0) / 1e6)
            guard listing.entries.count == expectedEntries, gaps == expectedGaps else {
                throw BenchUsageError("\(name) from \(from): listed \(listing.entries.count) entries and \(gaps) gaps, wrote \(expectedEntries) and \(expectedGaps)")
            }
        }
        millis.sort()
        return (millis[millis.count / 2], millis.last!, millis.count)
    }

    /// Bytes free to this user on the file system holding `path`.
    static func freeBytes(_ path: String) throws -> Int64 {
        var s = statvfs()
        guard statvfs(path, &s) == 0 else { throw BenchUsageError("cannot read the free space of \(path): \(String(cString: strerror(errno)))") }
        let (bytes, overflow) = UInt64(s.f_bavail).multipliedReportingOverflow(by: UInt64(s.f_frsize))
        return overflow ? .max : Int64(clamping: bytes)
    }
}
