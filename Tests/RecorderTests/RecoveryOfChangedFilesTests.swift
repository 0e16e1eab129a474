import CaptureTesting
import Foundation
import Glibc
@testable import Recorder
import Testing

/// Start-up recovery does not trust a finished file whose size or modification time is not the
/// one indexed: cut short
/// (`truncate -s 50%`), it is cut back to its last complete fragment, decoded, and indexed as it
/// is; with nothing left that decodes, it is moved aside. Before, the index kept "75 frames,
/// complete" for a file holding 34, and an index rebuilt from the files adopted it as complete
/// although it did not decode.
@Suite(.timeLimit(.minutes(2))) struct RecoveryOfChangedFilesTests {
    private func problems(_ index: RecordingIndex) throws -> [String] {
        try IndexVerification(index: index, selection: .init(deep: true)).problems.map { "\($0.path): \($0.problem.rawValue): \($0.detail)" }
    }

    private func truncate(_ path: String, toPercent percent: Int) throws {
        let size = try #require(try FileManager.default.attributesOfItem(atPath: path)[.size] as? Int)
        #expect(Glibc.truncate(path, off_t(size * percent / 100)) == 0)
    }

    @Test func aFinishedSegmentCutShortAfterItWasIndexedIsIndexedAgainAsItIs() async throws {
        let dir = try TemporaryDirectory("vigil-changed")
        defer { dir.remove() }
        let segment = try await recordSegment(root: dir.path, camera: "porch")
        let first = try StorageKeeper.open(root: dir.path, policy: RetentionPolicy(), events: RecorderEvents())
        let indexed = try #require(try first.index.entries(kind: .segment).first)
        #expect(first.recovery.adopted == 1 && indexed.state == .complete)

        try truncate(segment, toPercent: 50)
        let again = try StorageKeeper.open(root: dir.path, policy: RetentionPolicy(), events: RecorderEvents())
        #expect(again.recovery.reindexed == 1 && again.recovery.known == 0, "\(again.recovery)")
        let entry = try #require(try again.index.entries(kind: .segment).first)
        let decoded = try RecordingInspector.decode(segment)
        #expect(entry.state == .recovered)
        #expect(entry.frames == decoded.sequences.count && entry.frames < indexed.frames, "\(entry.frames) of \(indexed.frames)")
        let found = try problems(again.index)
        #expect(found.isEmpty, "\(found)")
        // Indexed as it is now: the next start finds it in order.
        let third = try StorageKeeper.open(root: dir.path, policy: RetentionPolicy(), events: RecorderEvents())
        #expect(third.recovery.known == 1 && third.recovery.reindexed == 0, "\(third.recovery)")
    }

    @Test func aRebuiltIndexAdoptsACutShortSegmentOnlyAsFarAsItDecodes() async throws {
        let dir = try TemporaryDirectory("vigil-changed-rebuild")
        defer { dir.remove() }
        let segment = try await recordSegment(root: dir.path, camera: "porch")
        try truncate(segment, toPercent: 50)
        // No index: rebuilt from the files alone.
        let keeper = try StorageKeeper.open(root: dir.path, policy: RetentionPolicy(), events: RecorderEvents())
        #expect(keeper.recovery.adopted == 1, "\(keeper.recovery)")
        let entry = try #require(try keeper.index.entries(kind: .segment).first)
        #expect(entry.state == .recovered)
        #expect(entry.frames == (try RecordingInspector.decode(segment)).sequences.count)
        let found = try problems(keeper.index)
        #expect(found.isEmpty, "\(found)")
    }

    @Test func aFinishedSegmentOfWhichNothingDecodesIsMovedAside() async throws {
        let dir = try TemporaryDirectory("vigil-changed-garbage")
        defer { dir.remove() }
        let segment = try await recordSegment(root: dir.path, camera: "porch")
        let first = try StorageKeeper.open(root: dir.path, policy: RetentionPolicy(), events: RecorderEvents())
        #expect(first.recovery.adopted == 1)
        // Rewritten with bytes that are not a video.
        try Data((0..<3000).map { UInt8(truncatingIfNeeded: $0 * 13) }).write(to: URL(fileURLWithPath: segment))
        let again = try StorageKeeper.open(root: dir.path, policy: RetentionPolicy(), events: RecorderEvents())
        #expect(again.recovery.quarantined == 1 && again.recovery.known == 0, "\(again.recovery)")
        #expect(!FileManager.default.fileExists(atPath: segment))
        #expect(try again.index.entries(kind: .segment).allSatisfy { $0.state == .quarantined })
    }

    /// A finished file changed in place at the same size (its last third overwritten): its
    /// modification time is not the one indexed, so it is read again, and the index then says
    /// what the disk holds (`verify --deep` clean). Only its time set (`touch`, a copy that
    /// dropped the times): its packets are the indexed ones, so it is kept as it was, with its
    /// new time (not read again at the next start).
    @Test(arguments: [true, false]) func aFinishedSegmentChangedAtTheSameSizeIsReadAgain(overwritten: Bool) async throws {
        let dir = try TemporaryDirectory("vigil-changed-same-size")
        defer { dir.remove() }
        let segment = try await recordSegment(root: dir.path, camera: "porch")
        let first = try StorageKeeper.open(root: dir.path, policy: RetentionPolicy(), events: RecorderEvents())
        #expect(first.recovery.adopted == 1)
        let size = try #require(try FileManager.default.attributesOfItem(atPath: segment)[.size] as? Int)
        if overwritten {
            let file = try FileHandle(forWritingTo: URL(fileURLWithPath: segment))
            try file.seek(toOffset: UInt64(size * 2 / 3))
            try file.write(contentsOf: Data(repeating: 0x5A, count: size - size * 2 / 3))
            try file.close()
        }
        var times = [timespec(tv_sec: 1_700_000_000, tv_nsec: 0), timespec(tv_sec: 1_700_000_000, tv_nsec: 0)]
        #expect(utimensat(AT_FDCWD, segment, &times, 0) == 0)
        let again = try StorageKeeper.open(root: dir.path, policy: RetentionPolicy(), events: RecorderEvents())
        if overwritten {
            #expect(again.recovery.reindexed + again.recovery.quarantined == 1 && again.recovery.known == 0, "\(again.recovery)")
        } else {
            #expect(again.recovery.known == 1 && again.recovery.reindexed == 0, "\(again.recovery)")
            #expect(try again.index.entries(kind: .segment).first?.state == .complete)
            #expect(try again.index.modifiedTimes().values.first == 1_700_000_000_000_000_000, "the new time is kept")
        }
        let found = try problems(again.index)
        #expect(found.isEmpty, "\(found)")
        let third = try StorageKeeper.open(root: dir.path, policy: RetentionPolicy(), events: RecorderEvents())
        #expect(third.recovery.reindexed == 0 && third.recovery.quarantined == 0, "\(third.recovery)")
    }

    /// A finished file whose row was left `writing` (a kill while the disk was full: its last
    /// index write did not land) is adopted with the row's exact start, not its name's whole
    /// second: from that, it seemed to begin before the file before it ended (`Scripts/chaos`,
    /// seed 110: two RTSP files overlapping by 0.38 s).
    @Test func aFileWhoseRowWasLeftWritingKeepsTheExactStartOfTheRow() async throws {
        let dir = try TemporaryDirectory("vigil-changed-writing")
        defer { dir.remove() }
        let segment = try await recordSegment(root: dir.path, camera: "porch")
        let first = try StorageKeeper.open(root: dir.path, policy: RetentionPolicy(), events: RecorderEvents())
        var row = try #require(try first.index.entries(kind: .segment).first)
        let named = row.startNanos
        #expect(named % 1_000_000_000 == 0, "adopted from its name: a whole second")
        row.startNanos = named + 400_000_000
        row.state = .writing
        try first.index.put(row)
        let again = try StorageKeeper.open(root: dir.path, policy: RetentionPolicy(), events: RecorderEvents())
        let entry = try #require(try again.index.entries(kind: .segment).first)
        #expect(entry.startNanos == named + 400_000_000 && entry.state == .complete, "\(entry)")
        #expect(entry.frames == (try RecordingInspector.decode(segment)).sequences.count)
    }
}
