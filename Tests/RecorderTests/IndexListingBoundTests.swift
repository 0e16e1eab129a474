import CaptureTesting
import Foundation
@testable import Recorder
import Testing

/// `entries(from:to:)` bounds its walk of the index by the longest recording of each camera and
/// kind (schema v5's `recording_spans`). These tests hold it to the rows the plain overlap test
/// (`end_ns >= from AND start_ns <= to`) gives: the listing must be the same, only faster.
@Suite struct IndexListingBoundTests {
    private static let second: Int64 = 1_000_000_000
    private static let day = 86_400 * second
    private static let t0: Int64 = 1_795_000_000 * second

    private static func entry(_ kind: RecordingIndex.Kind, _ camera: String, _ start: Int64, _ end: Int64, _ name: String? = nil) -> RecordingIndex.Entry {
        RecordingIndex.Entry(
            kind: kind, camera: camera, path: "\(camera)/\(kind.folder)/\(name ?? "\(start)-\(end)")", startNanos: start, endNanos: end,
            frames: 1, bytes: 1, codec: "h264", width: 64, height: 48, state: .complete)
    }

    /// What the listing was before the bound: every entry that overlaps [from, to], by start then path.
    private static func overlapping(_ all: [RecordingIndex.Entry], camera: String?, kinds: [RecordingIndex.Kind]?, from: Int64?, to: Int64?) -> [String] {
        all.filter { e in
            (camera == nil || e.camera == camera) && (kinds?.contains(e.kind) ?? true)
                && (from.map { e.endNanos >= $0 } ?? true) && (to.map { e.startNanos <= $0 } ?? true)
        }
        // SQLite's BINARY collation compares the UTF-8 bytes.
        .sorted { $0.startNanos != $1.startNanos ? $0.startNanos < $1.startNanos : $0.path.utf8.lexicographicallyPrecedes($1.path.utf8) }
        .map(\.path)
    }

    private static func expectSameListing(_ index: RecordingIndex, camera: String?, kinds: [RecordingIndex.Kind]?, from: Int64?, to: Int64?,
                                          sourceLocation: SourceLocation = #_sourceLocation) throws {
        let all = try index.entries()
        let listed = try index.entries(camera: camera, kinds: kinds, from: from, to: to).map(\.path)
        #expect(listed == overlapping(all, camera: camera, kinds: kinds, from: from, to: to),
                "camera \(camera ?? "any"), kinds \(kinds.map { "\($0)" } ?? "any"), [\(from.map(String.init) ?? "-"), \(to.map(String.init) ?? "-")]",
                sourceLocation: sourceLocation)
    }

    @Test func entriesAtAndAcrossTheWindowsEdgesAreListedAndNoneOutside() throws {
        let index = try RecordingIndex.inMemory(root: "/nonexistent")
        let from = Self.t0, to = Self.t0 + Self.day
        let rows = [
            Self.entry(.segment, "porch", from - 60 * Self.second, from - 1, "ends-just-before"),
            Self.entry(.segment, "porch", from - 60 * Self.second, from, "ends-at-from"),
            Self.entry(.segment, "porch", from - 30 * Self.second, from + 30 * Self.second, "across-from"),
            Self.entry(.segment, "porch", from + Self.second, from + 61 * Self.second, "inside"),
            Self.entry(.segment, "porch", to, to + 60 * Self.second, "starts-at-to"),
            Self.entry(.segment, "porch", to + 1, to + 60 * Self.second, "starts-just-after"),
            // A long daily video that began 23 h before the window and one that covers all of it.
            Self.entry(.timelapse, "porch", from - 23 * 3600 * Self.second, from + 3600 * Self.second, "daily-across-from"),
            Self.entry(.timelapse, "porch", from - Self.day, to + Self.day, "covers-the-window"),
            // Stills have no length: at the edges exactly, and just outside.
            Self.entry(.still, "porch", from, from, "still-at-from"),
            Self.entry(.still, "porch", from - 1, from - 1, "still-before"),
            Self.entry(.still, "porch", to, to, "still-at-to"),
            Self.entry(.snapshot, "porch", to + 1, to + 1, "snapshot-after"),
            Self.entry(.segment, "yard", from - 30 * Self.second, from + 30 * Self.second, "yard-across-from"),
        ]
        for row in rows { try index.put(row) }
        #expect(try index.entries(camera: "porch", kinds: [.segment], from: from, to: to).map(\.path)
                == ["porch/video/ends-at-from", "porch/video/across-from", "porch/video/inside", "porch/video/starts-at-to"])
        #expect(try index.entries(camera: "porch", kinds: StorageKeeper.stillKinds, from: from, to: to).map(\.path)
                == ["porch/timelapse/covers-the-window", "porch/timelapse/daily-across-from", "porch/stills/still-at-from", "porch/stills/still-at-to"])
        for camera in [nil, "porch", "yard", "nobody"] {
            for kinds in [nil, [.segment], StorageKeeper.stillKinds, [.timelapse, .segment], [.still, .still], []] as [[RecordingIndex.Kind]?] {
                for (f, t) in [(from, to), (from, nil), (nil, to), (to, from), (from, from), (Int64.min, Int64.max)] as [(Int64?, Int64?)] {
                    try Self.expectSameListing(index, camera: camera, kinds: kinds, from: f, to: t)
                }
            }
        }
    }

    /// Random recordings of every kind and random windows, on a real index file (the listing
    /// reads on a connection of its own), against the plain overlap test.
    @Test func randomRecordingsAndWindowsListTheSameRowsAsTheOverlapTest() throws {
        let dir = try TemporaryDirectory("vigil-index-bound")
        defer { dir.remove() }
        let index = try RecordingIndex(root: dir.path)
        var random = SeededRandom.fromEnvironment("VIGIL_INDEX_BOUND_SEED", label: "index bound")
        let span = 10 * Self.day
        try index.transaction {
            for n in 0..<600 {
                let kind = RecordingIndex.Kind.allCases.randomElement(using: &random)!
                let start = Self.t0 + Int64.random(in: 0..<span, using: &random)
                let length: Int64 = switch kind {
                case .segment: Int64.random(in: 0...(300 * Self.second), using: &random)
                case .timelapse: Int64.random(in: 0...Self.day, using: &random)
                case .still, .snapshot: 0
                }
                try index.put(Self.entry(kind, ["porch", "yard"].randomElement(using: &random)!, start, start + length, "n\(n)"))
            }
        }
        for _ in 0..<300 {
            let from = Self.t0 + Int64.random(in: -Self.day...span, using: &random)
            let to = from + Int64.random(in: 0...(2 * Self.day), using: &random)
            let kinds: [RecordingIndex.Kind]? = [nil, StorageKeeper.videoKinds, StorageKeeper.stillKinds, [.timelapse]].randomElement(using: &random)!
            try Self.expectSameListing(index, camera: ["porch", "yard", nil].randomElement(using: &random)!, kinds: kinds, from: from, to: to)
        }
    }

    /// The bound follows every way a recording grows: a `writing` row completed longer, a row
    /// whose start moved back (recovery), times shifted after a clock step; and a deleted
    /// longest recording leaves it where it was (still a bound).
    @Test func aRecordingThatGrowsOrMovesIsStillListed() throws {
        let index = try RecordingIndex.inMemory(root: "/nonexistent")
        let from = Self.t0, to = Self.t0 + 60 * Self.second
        try index.put(Self.entry(.segment, "porch", from - 60 * Self.second, from - 1, "short"))
        var growing = Self.entry(.segment, "porch", from - 600 * Self.second, from - 600 * Self.second, "growing")
        growing.state = .writing
        try index.put(growing)
        #expect(try index.entries(camera: "porch", kind: .segment, from: from, to: to).isEmpty)
        growing.endNanos = from + Self.second
        growing.state = .complete
        try index.put(growing)
        #expect(try index.entries(camera: "porch", kind: .segment, from: from, to: to).map(\.path) == ["porch/video/growing"])
        try index.run("UPDATE recordings SET start_ns = ?1 WHERE path = 'porch/video/short'", [.integer(from - 3600 * Self.second)])
        try index.run("UPDATE recordings SET end_ns = ?1 WHERE path = 'porch/video/short'", [.integer(from + 1)])
        #expect(try index.entries(camera: "porch", kind: .segment, from: from, to: to).map(\.path) == ["porch/video/short", "porch/video/growing"])
        #expect(try index.shiftTimes(by: 7200 * Self.second, endingFrom: from - 7200 * Self.second, to: from + 7200 * Self.second) == 2)
        try Self.expectSameListing(index, camera: "porch", kinds: [.segment], from: from + 7200 * Self.second, to: to + 7200 * Self.second)
        #expect(try index.entries(camera: "porch", kind: .segment, from: from + 7200 * Self.second, to: to + 7200 * Self.second).count == 2)
        try index.remove(path: "porch/video/short")
        try index.put(Self.entry(.segment, "porch", from - 60 * Self.second, from + 1, "after-delete"))
        try Self.expectSameListing(index, camera: "porch", kinds: [.segment], from: from, to: to)
    }

    /// Times at the ends of 64 bits: a length or a `from − length` that does not fit gives no
    /// bound, never a wrong one.
    @Test func timesAtTheEndsOf64BitsAreListedAsBefore() throws {
        let index = try RecordingIndex.inMemory(root: "/nonexistent")
        try index.put(Self.entry(.segment, "porch", Int64.min, Int64.max, "everything"))
        try index.put(Self.entry(.segment, "porch", Int64.min, Int64.min + 10, "at-the-start"))
        try index.put(Self.entry(.still, "porch", Int64.max, Int64.max, "at-the-end"))
        try index.put(Self.entry(.timelapse, "porch", -Self.day, Self.day, "around-zero"))
        for (from, to) in [(Int64.min, Int64.max), (Int64.min + 5, Int64.min + 5), (0, 0), (Int64.max, Int64.max), (Int64.max - 1, Int64.max), (-1, 1)] {
            for kinds in [nil, [.segment], [.still, .timelapse]] as [[RecordingIndex.Kind]?] {
                try Self.expectSameListing(index, camera: "porch", kinds: kinds, from: from, to: to)
            }
        }
        #expect(try index.entries(camera: "porch", kind: .segment, from: 0, to: 0).map(\.path) == ["porch/video/everything"])
    }

    /// SQLite walks one camera's kind only from `from − longest` to `to` in `recordings_by_time`.
    @Test func aWindowedListingWalksABoundedRangeOfTheIndex() throws {
        let dir = try TemporaryDirectory("vigil-index-plan")
        defer { dir.remove() }
        let index = try RecordingIndex(root: dir.path)
        try index.put(Self.entry(.segment, "porch", Self.t0, Self.t0 + 60 * Self.second))
        try index.put(Self.entry(.timelapse, "porch", Self.t0, Self.t0 + Self.day))
        try index.put(Self.entry(.still, "porch", Self.t0, Self.t0))
        try index.put(Self.entry(.snapshot, "porch", Self.t0 + 1, Self.t0 + 1))
        for kinds in [StorageKeeper.videoKinds, StorageKeeper.stillKinds] {
            let longest = try index.readTogether { try RecordingIndex.longestSpans($0, camera: "porch") }
            let query = RecordingIndex.entriesQuery(camera: "porch", kinds: kinds, from: Self.t0, to: Self.t0 + Self.day, states: nil, longest: longest)
            let plan = try index.read("EXPLAIN QUERY PLAN " + query.sql, query.values) { RecordingIndex.text($0, 3) }
            let walks = plan.filter { $0.contains("SEARCH recordings USING") }
            #expect(walks.count == kinds.count, "\(plan)")
            #expect(walks.allSatisfy { $0.contains("recordings_by_time (camera=? AND kind=? AND start_ns>? AND start_ns<?)") }, "\(plan)")
        }
    }

    /// An index written by the previous version (schema 4: no `recording_spans`) is migrated:
    /// the bounds are computed from the rows it already holds.
    @Test func aVersion4IndexIsMigratedWithTheLongestRecordingsItHolds() throws {
        let dir = try TemporaryDirectory("vigil-index-v4")
        defer { dir.remove() }
        let from = Self.t0, to = Self.t0 + Self.day
        do {
            let index = try RecordingIndex(root: dir.path)
            // What schema 5 added, taken away: the file is as version 4 wrote it.
            try index.execute("""
                DROP TRIGGER recording_spans_insert; DROP TRIGGER recording_spans_update; DROP TABLE recording_spans;
                PRAGMA user_version = 4;
                """)
            try index.put(Self.entry(.segment, "porch", from - 30 * Self.second, from + 30 * Self.second, "across-from"))
            try index.put(Self.entry(.timelapse, "porch", from - 20 * 3600 * Self.second, from + Self.second, "daily-across-from"))
            try index.put(Self.entry(.segment, "yard", from - 3600 * Self.second, from + Self.second, "yard-hour"))
            #expect(try index.userVersion() == 4)
        }
        let index = try RecordingIndex(root: dir.path)
        #expect(try index.userVersion() == RecordingIndex.schemaVersion)
        let longest = try index.readTogether { try RecordingIndex.longestSpans($0, camera: "porch") }
        #expect(longest == ["segment": 60 * Self.second, "timelapse": 20 * 3600 * Self.second + Self.second, RecordingIndex.anyKind: 20 * 3600 * Self.second + Self.second])
        #expect(try index.entries(camera: "porch", kinds: StorageKeeper.videoKinds, from: from, to: to).map(\.path) == ["porch/video/across-from"])
        #expect(try index.entries(camera: "porch", kinds: StorageKeeper.stillKinds, from: from, to: to).map(\.path) == ["porch/timelapse/daily-across-from"])
        #expect(try index.entries(kinds: StorageKeeper.videoKinds, from: from, to: to).map(\.path) == ["yard/video/yard-hour", "porch/video/across-from"])
    }
}
