import CaptureTesting
@testable import Cluster
import Recorder
import Testing

/// The index tests that use only `RecordingCatalog`'s methods, on both back ends: whatever the
/// web API and the commands see from SQLite they see the same from PostgreSQL (order, overlap,
/// filters, replacement by path, motion events, review and its paging).
@Suite(.timeLimit(.minutes(2))) struct CatalogContractTests {
    /// A second, and a start time (November 2026), in nanoseconds.
    private let s: Int64 = 1_000_000_000
    private let b: Int64 = 1_790_000_000 * 1_000_000_000

    @Test(arguments: CatalogBackend.allCases)
    func entriesAreListedByStartThenPathAndReplacedByPath(_ backend: CatalogBackend) async throws {
        let db = try await backend.open()
        defer { db.remove() }
        let late = segment("c", start: b + 10 * s)
        // Same start: by path in byte order (capitals first), whatever the database's locale.
        let firstB = segment("B", start: b)
        let firstA = segment("a", start: b)
        try await db { for entry in [late, firstA, firstB] { try $0.put(entry) } }
        let listed = try await db { try $0.all() }
        #expect(listed.map(\.path) == [firstB.path, firstA.path, late.path])
        #expect(listed.map { Self.withoutID($0) } == [firstB, firstA, late])
        #expect(Set(listed.map(\.id)).count == 3 && listed.allSatisfy { $0.id > 0 })

        var replaced = late
        replaced.bytes = 77_777
        replaced.state = .interrupted
        try await db { [replaced] in try $0.put(replaced) }
        let again = try await db { try $0.all() }
        #expect(again.count == 3)
        #expect(again.last.map { Self.withoutID($0) } == replaced)
        #expect(again.last?.id == listed.last?.id, "a put of a listed path replaces its row, keeping its id")

        let byID = try await db { [id = listed[1].id] in try $0.entry(id: id) }
        #expect(byID.map { Self.withoutID($0) } == firstA)
        let unknown = try await db { [ids = listed.map(\.id)] in try $0.entry(id: ids.max()! + 1_000) }
        #expect(unknown == nil)
    }

    @Test(arguments: CatalogBackend.allCases)
    func entriesAreFilteredByCameraKindOverlapAndState(_ backend: CatalogBackend) async throws {
        let db = try await backend.open()
        defer { db.remove() }
        let early = segment("early", start: b, end: b + 10 * s)
        let spanning = segment("spanning", start: b + 15 * s, end: b + 25 * s)
        let inside = segment("inside", start: b + 21 * s, end: b + 22 * s, state: .missing)
        let after = segment("after", start: b + 40 * s, end: b + 50 * s)
        let still = segment("still", start: b + 21 * s, end: b + 21 * s, kind: .still)
        let gate = segment("gate", camera: "gate", start: b + 21 * s)
        try await db { for entry in [early, spanning, inside, after, still, gate] { try $0.put(entry) } }

        let window = try await db { try $0.entries(camera: "porch", kinds: nil, from: b + 20 * s, to: b + 30 * s, states: nil) }
        #expect(window.map(\.path) == [spanning.path, inside.path, still.path], "what overlaps [20 s, 30 s], of porch only")
        let touching = try await db { try $0.entries(camera: nil, kinds: [.segment], from: b + 10 * s, to: b + 15 * s, states: nil) }
        #expect(touching.map(\.path) == [early.path, spanning.path], "an entry that ends or starts on the bound overlaps it")
        let segments = try await db { try $0.entries(camera: "porch", kinds: [.segment], from: nil, to: nil, states: [.complete]) }
        #expect(segments.map(\.path) == [early.path, spanning.path, after.path])
        let stills = try await db { try $0.entries(camera: nil, kinds: [.still, .snapshot], from: nil, to: nil, states: nil) }
        #expect(stills.map(\.path) == [still.path])
        let missing = try await db { try $0.entries(camera: nil, kinds: nil, from: nil, to: nil, states: [.missing, .quarantined]) }
        #expect(missing.map(\.path) == [inside.path])
        let none = try await db { try $0.entries(camera: "porch", kinds: [], from: nil, to: nil, states: nil) }
        #expect(none.isEmpty, "no kinds asked for, none listed")
        let gates = try await db { try $0.entries(camera: "gate", kinds: nil, from: nil, to: b, states: nil) }
        #expect(gates.isEmpty, "gate's only entry starts after the window")
    }

    @Test(arguments: CatalogBackend.allCases)
    func stateChangesAndRemovalsTouchOnlyTheirPath(_ backend: CatalogBackend) async throws {
        let db = try await backend.open()
        defer { db.remove() }
        let one = segment("one", start: b, state: .writing)
        let two = segment("two", start: b + s, state: .writing)
        try await db {
            try $0.put(one)
            try $0.put(two)
            try $0.setState(.complete, path: one.path)
        }
        #expect(try await db { try $0.all() }.map(\.state) == [.complete, .writing])
        try await db {
            try $0.remove(path: two.path)
            try $0.remove(path: "porch/video/never-there.mp4")
            try $0.setState(.missing, path: "porch/video/never-there.mp4")
        }
        let left = try await db { try $0.all() }
        #expect(left.map(\.path) == [one.path])
        #expect(left.map(\.state) == [.complete])
    }

    @Test(arguments: CatalogBackend.allCases)
    func camerasAreInByteOrderAndBytesCountWhatIsStillThere(_ backend: CatalogBackend) async throws {
        let db = try await backend.open()
        defer { db.remove() }
        #expect(try await db { try $0.cameras() }.isEmpty)
        let empty = try await db { try $0.bytesRecorded(sinceNanos: 0) }
        #expect(empty.bytes == 0 && empty.firstStart == nil)
        try await db {
            try $0.put(segment("1", camera: "yard", start: b, bytes: 100))
            try $0.put(segment("2", camera: "Yard", start: b + 10 * s, bytes: 20))
            try $0.put(segment("3", camera: "gate", start: b + 20 * s, bytes: 3))
            try $0.put(segment("4", camera: "gate", start: b + 30 * s, bytes: 4_000, state: .missing))
            try $0.put(segment("5", camera: "gate", start: b + 31 * s, bytes: 50_000, state: .quarantined))
        }
        // Byte order (SQLite's BINARY, PostgreSQL's "C"): capitals first, whatever the locale.
        #expect(try await db { try $0.cameras() } == ["Yard", "gate", "yard"])
        let recent = try await db { try $0.bytesRecorded(sinceNanos: b + 10 * s) }
        #expect(recent.bytes == 23, "ended at or after the time, neither missing nor quarantined")
        #expect(recent.firstStart == b + 10 * s)
        let all = try await db { try $0.bytesRecorded(sinceNanos: 0) }
        #expect(all.bytes == 123 && all.firstStart == b)
    }

    @Test(arguments: CatalogBackend.allCases)
    func aMotionEventIsListedWhenItStartsAndCompletedWhenItEnds(_ backend: CatalogBackend) async throws {
        let db = try await backend.open()
        defer { db.remove() }
        try await db {
            try $0.startMotionEvent(camera: "porch", startNanos: b + 10 * s)
            // Started twice (an event replayed): still one row.
            try $0.startMotionEvent(camera: "porch", startNanos: b + 10 * s)
            try $0.endMotionEvent(camera: "gate", startNanos: b, endNanos: b + 5 * s, peakPercent: 2.5, picture: "gate/events/0.jpg")
        }
        let listed = try await db { try $0.motionEvents(camera: nil, from: nil, to: nil) }
        #expect(listed.map(\.camera) == ["gate", "porch"])
        #expect(listed.map(\.endNanos) == [b + 5 * s, nil])
        #expect(listed.first?.picture == "gate/events/0.jpg" && listed.first?.peakPercent == 2.5)

        // Under way, it overlaps every window after its start; the gate's ended before this one.
        let later = try await db { try $0.motionEvents(camera: nil, from: b + 100 * s, to: b + 200 * s) }
        #expect(later.map(\.camera) == ["porch"])
        try await db {
            try $0.endMotionEvent(camera: "porch", startNanos: b + 10 * s, endNanos: b + 20 * s, peakPercent: 9.75, picture: "porch/events/1.jpg")
        }
        #expect(try await db { try $0.motionEvents(camera: nil, from: b + 100 * s, to: b + 200 * s) }.isEmpty)
        let porch = try await db { try $0.motionEvents(camera: "porch", from: nil, to: nil) }
        #expect(porch.count == 1)
        #expect(porch.first?.endNanos == b + 20 * s && porch.first?.peakPercent == 9.75 && porch.first?.picture == "porch/events/1.jpg")
        #expect(porch.first?.id == listed.last?.id, "ending an event completes its row")
        let byID = try await db { [id = porch[0].id] in try $0.motionEvent(id: id) }
        #expect(byID == porch.first)
        let unknown = try await db { [id = porch[0].id] in try $0.motionEvent(id: id + 1_000) }
        #expect(unknown == nil)
    }

    /// `putMotionEvent` (what a node's journal writes): adds, replaces, keeps a review mark that
    /// the put lacks unless it replaces the mark, and `removeMotionEvent` takes the row away.
    @Test(arguments: CatalogBackend.allCases)
    func anEventPutAsItIsReplacesItsRowButKeepsAReviewMark(_ backend: CatalogBackend) async throws {
        let db = try await backend.open()
        defer { db.remove() }
        let under = RecordingIndex.MotionEvent(id: 0, camera: "porch", startNanos: b, endNanos: nil, peakPercent: 5, picture: nil, reviewedNanos: nil)
        var ended = under
        ended.endNanos = b + 3 * s
        ended.picture = "porch/events/0.jpg"
        try await db { try $0.putMotionEvent(under, replacingMark: false) }
        let first = try #require(try await db { try $0.motionEvents(camera: "porch", from: nil, to: nil) }.first)
        #expect(first.endNanos == nil && first.picture == nil)
        try await db { [id = first.id] in _ = try $0.setMotionEventReviewed(id: id, at: 42) }
        try await db { [ended] in try $0.putMotionEvent(ended, replacingMark: false) }
        let listed = try await db { try $0.motionEvents(camera: "porch", from: nil, to: nil) }
        #expect(listed.count == 1 && listed[0].id == first.id)
        #expect(listed[0].endNanos == b + 3 * s && listed[0].picture == "porch/events/0.jpg" && listed[0].reviewedNanos == 42)
        ended.reviewedNanos = 50
        try await db { [ended] in try $0.putMotionEvent(ended, replacingMark: false) }
        #expect(try await db { try $0.motionEvents(camera: "porch", from: nil, to: nil) }.first?.reviewedNanos == 50)
        // A mark cleared where the event was recorded clears it here too.
        ended.reviewedNanos = nil
        try await db { [ended] in try $0.putMotionEvent(ended, replacingMark: true) }
        #expect(try await db { try $0.motionEvents(camera: "porch", from: nil, to: nil) }.first?.reviewedNanos == nil)
        try await db { try $0.removeMotionEvent(camera: "porch", startNanos: b) }
        try await db { try $0.removeMotionEvent(camera: "porch", startNanos: b) }
        #expect(try await db { try $0.motionEvents(camera: nil, from: nil, to: nil) }.isEmpty)
    }

    @Test(arguments: CatalogBackend.allCases)
    func eventsAreReviewedOnceAndPagedNewestFirstWithoutRepeatsOrGaps(_ backend: CatalogBackend) async throws {
        let db = try await backend.open()
        defer { db.remove() }
        // EventReviewTests' events: two cameras, two events starting at the same instant, one under way.
        try await db {
            for (camera, offset) in [("yard", 0), ("porch", 10), ("yard", 20), ("porch", 20), ("yard", 30), ("porch", 40)] as [(String, Int64)] {
                let start = b + offset * s
                try $0.endMotionEvent(camera: camera, startNanos: start, endNanos: start + 12_340_000_000, peakPercent: 4.56, picture: nil)
            }
            try $0.startMotionEvent(camera: "yard", startNanos: b + 50 * s)
        }
        let all = try await db { try $0.motionEvents(camera: nil, from: nil, to: nil) }
        let newestFirst = all.sorted { ($0.startNanos, $0.id) > ($1.startNanos, $1.id) }.map(\.id)
        #expect(try await db { try $0.newestFirst(limit: 100) }.map(\.id) == newestFirst)

        var paged: [Int64] = []
        var cursor: RecordingIndex.MotionEventCursor?
        for _ in 0..<10 {
            let page = try await db { [cursor] in try $0.newestFirst(before: cursor, limit: 2) }
            guard let last = page.last else { break }
            paged += page.map(\.id)
            cursor = RecordingIndex.MotionEventCursor(last)
        }
        #expect(paged == newestFirst, "pages of 2 list every event once, in order, across the shared start")

        let porch = try await db { try $0.newestFirst(camera: "porch", from: b + 15 * s, to: b + 45 * s, limit: 100) }
        #expect(porch.map(\.startNanos) == [b + 40 * s, b + 20 * s, b + 10 * s], "porch's events overlapping [15 s, 45 s]")

        let first = newestFirst[0], second = newestFirst[1]
        #expect(try await db { try $0.setMotionEventReviewed(id: first, at: 42) })
        #expect(try await db { try $0.setMotionEventReviewed(id: newestFirst.max()! + 1, at: 42) } == false)
        #expect(try await db { try $0.motionEvent(id: first)?.reviewedNanos } == 42)
        #expect(try await db { try $0.setMotionEventReviewed(id: first, at: 99) })
        #expect(try await db { try $0.motionEvent(id: first)?.reviewedNanos } == 42, "marked again: the first time is kept")
        #expect(try await db { try $0.setMotionEventReviewed(id: second, at: 7) })
        let unreviewed = try await db { try $0.newestFirst(unreviewedOnly: true, limit: 100) }
        #expect(unreviewed.map(\.id) == Array(newestFirst.dropFirst(2)))
        #expect(try await db { try $0.setMotionEventReviewed(id: first, at: nil) })
        #expect(try await db { try $0.motionEvent(id: first)?.reviewedNanos } == nil, "unmarked")
        #expect(try await db { try $0.newestFirst(unreviewedOnly: true, limit: 100) }.count == newestFirst.count - 1)
        #expect(try await db { try $0.newestFirst(limit: 0) }.isEmpty)
    }

    /// Random recordings of every kind and length (stills have none, a daily video a day) and
    /// random windows, the ends of 64 bits among them: each back end lists exactly the rows of
    /// the plain overlap test (`end >= from AND start <= to`), by start then path in byte order.
    /// (SQLite's bound on a listing's walk has its own tests in IndexListingBoundTests.)
    @Test(arguments: CatalogBackend.allCases)
    func randomWindowsListExactlyTheOverlappingRows(_ backend: CatalogBackend) async throws {
        let db = try await backend.open()
        defer { db.remove() }
        var random = SeededRandom.fromEnvironment("VIGIL_INDEX_BOUND_SEED", label: "catalog windows (\(backend))")
        let day = 86_400 * s, span = 10 * day
        // The catalogue refuses times before 1970 and spans no Int64 holds (PostgresCatalogTests),
        // so the extremes are those both keep.
        var rows: [RecordingIndex.Entry] = [
            segment("everything", start: 0, end: .max), segment("at-the-start", start: 0, end: 10),
            segment("at-the-end", start: .max, end: .max, kind: .still),
        ]
        for n in 0..<300 {
            let kind = RecordingIndex.Kind.allCases.randomElement(using: &random)!
            let start = b + Int64.random(in: 0..<span, using: &random)
            let length: Int64 = switch kind {
            case .segment: Int64.random(in: 0...(300 * s), using: &random)
            case .timelapse: Int64.random(in: 0...day, using: &random)
            case .still, .snapshot: 0
            }
            rows.append(segment("n\(n)", camera: ["porch", "yard"].randomElement(using: &random)!, start: start, end: start + length, kind: kind))
        }
        try await db { [rows] catalog in for row in rows { try catalog.put(row) } }
        var windows: [(Int64?, Int64?)] = [(nil, nil), (.min, .max), (.max, .max), (.min, .min), (0, 0), (b, nil), (nil, b)]
        for _ in 0..<120 {
            let from = b + Int64.random(in: -day...span, using: &random)
            windows.append((from, from + Int64.random(in: 0...(2 * day), using: &random)))
        }
        for (from, to) in windows {
            let camera = ["porch", "yard", nil].randomElement(using: &random)!
            let kinds: [RecordingIndex.Kind]? = [nil, [.segment], [.still, .timelapse, .snapshot], [.timelapse]].randomElement(using: &random)!
            let expected = rows.filter { e in
                (camera == nil || e.camera == camera) && (kinds?.contains(e.kind) ?? true)
                    && (from.map { e.endNanos >= $0 } ?? true) && (to.map { e.startNanos <= $0 } ?? true)
            }
            .sorted { $0.startNanos != $1.startNanos ? $0.startNanos < $1.startNanos : $0.path.utf8.lexicographicallyPrecedes($1.path.utf8) }
            .map(\.path)
            let listed = try await db { try $0.entries(camera: camera, kinds: kinds, from: from, to: to, states: nil).map(\.path) }
            #expect(listed == expected, "\(backend): camera \(camera ?? "any"), kinds \(kinds.map { "\($0)" } ?? "any"), [\(from.map(String.init) ?? "-"), \(to.map(String.init) ?? "-")]")
        }
    }

    private static func withoutID(_ entry: RecordingIndex.Entry) -> RecordingIndex.Entry {
        var entry = entry
        entry.id = 0
        return entry
    }
}

extension RecordingCatalog {
    /// Every entry, as `entries()` with no filter.
    func all() throws -> [RecordingIndex.Entry] {
        try entries(camera: nil, kinds: nil, from: nil, to: nil, states: nil)
    }

    /// `motionEventsNewestFirst` with the tests' usual defaults.
    func newestFirst(
        camera: String? = nil, from: Int64? = nil, to: Int64? = nil, unreviewedOnly: Bool = false,
        before: RecordingIndex.MotionEventCursor? = nil, limit: Int
    ) throws -> [RecordingIndex.MotionEvent] {
        try motionEventsNewestFirst(camera: camera, from: from, to: to, unreviewedOnly: unreviewedOnly, before: before, limit: limit)
    }
}
