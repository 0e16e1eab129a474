import Capture
import CaptureTesting
import Foundation
import Plumbing
@testable import Recorder
import Synchronization
import Testing

/// `[archive]` as the configuration reads it: every key checked, keys read at once, secrets
/// never printed.
@Suite struct ArchiveConfigurationTests {
    private func parse(_ text: String, environment: [String: String] = [:]) throws -> Configuration {
        try ConfigurationLoader.parse(text: text + "\n[cameras.a]\ndevice = \"synthetic-0\"\n", path: "vigil.toml", environment: environment)
    }

    private func errors(_ text: String, environment: [String: String] = [:]) -> String {
        do {
            _ = try parse(text, environment: environment)
            return ""
        } catch {
            return "\(error)"
        }
    }

    private func credentials(_ dir: TemporaryDirectory, mode: mode_t = 0o600) throws -> String {
        let path = dir.path + "/s3"
        try "# keys\n[default]\naws_access_key_id = AKIDTEST\naws_secret_access_key = very-secret-key\n[other]\naws_access_key_id = NOT\n"
            .write(toFile: path, atomically: true, encoding: .utf8)
        chmod(path, mode)
        return path
    }

    @Test func aFullSectionIsReadWithItsDefaultsAndNeverShowsTheSecret() throws {
        let dir = try TemporaryDirectory("vigil-archive-config")
        defer { dir.remove() }
        let file = try credentials(dir)
        let c = try parse("""
            [archive]
            url = "s3://my-footage/site/one/"
            endpoint = "http://127.0.0.1:9000"
            credentials_file = "\(file)"
            upload_rate = "20 Mbit/s"
            max_age_days = 365
            """)
        let a = try #require(c.archive)
        #expect(a.bucket == "my-footage" && a.prefix == "site/one")
        #expect(a.credentials.accessKeyID == "AKIDTEST" && a.credentials.secretAccessKey == "very-secret-key")
        #expect(a.endpointParts == ("http", "127.0.0.1", 9000) && a.pathStyle, "an endpoint means path-style addressing")
        #expect(a.region == "us-east-1" && a.keepLocalDays == 7 && a.maxAgeDays == 365 && !a.redirect)
        #expect(a.uploadBytesPerSecond == 2_500_000)
        #expect(a.partSize == 16 * 1_048_576 && a.multipartThreshold == 32 * 1_048_576 && a.concurrency == 2 && a.timeoutSeconds == 60)
        #expect(a.drainSeconds == 10, "a clean stop uploads for 10 s unless told otherwise")
        #expect(try parse("[archive]\nurl = \"s3://footage\"\ncredentials_file = \"\(file)\"\ndrain_seconds = 0").archive?.drainSeconds == 0)
        let summary = c.summary(present: [])
        #expect(summary.contains("archive: s3://my-footage/site/one at http://127.0.0.1:9000 (us-east-1), keys from \(file)"), "\(summary)")
        for text in [summary, "\(a)", a.debugDescription, "\(a.credentials)", a.credentials.debugDescription] {
            #expect(!text.contains("very-secret-key"), "the secret was shown: \(text)")
        }
    }

    @Test func withoutAFileTheKeysComeFromTheEnvironmentAndAWSIsTheDefault() throws {
        let c = try parse("[archive]\nurl = \"s3://footage\"\nregion = \"eu-west-1\"",
                          environment: ["AWS_ACCESS_KEY_ID": "AKIDENV", "AWS_SECRET_ACCESS_KEY": "env-secret", "AWS_SESSION_TOKEN": "token"])
        let a = try #require(c.archive)
        #expect(a.credentials.accessKeyID == "AKIDENV" && a.credentials.sessionToken == "token" && a.credentials.source == "the environment")
        #expect(a.endpointParts == ("https", "s3.eu-west-1.amazonaws.com", 443) && !a.pathStyle && a.prefix.isEmpty)
        #expect(!c.summary(present: []).contains("env-secret"))
    }

    @Test(arguments: [
        ("[archive]\nendpoint = \"https://s3.example.net\"", "vigil.toml:1: error: [archive] needs url"),
        ("[archive]\nurl = \"s3://UPPER\"", "vigil.toml:2: error: url \"s3://UPPER\" is not s3://BUCKET/PREFIX"),
        ("[archive]\nurl = \"https://bucket\"", "is not s3://BUCKET/PREFIX"),
        ("[archive]\nurl = \"s3://footage\"\nendpoint = \"http://192.168.1.9:9000\"", "vigil.toml:3: error: endpoint http://192.168.1.9:9000 is plain http to another machine"),
        ("[archive]\nurl = \"s3://footage\"\nendpoint = \"s3.example.net\"", "is not http(s)://HOST[:PORT]"),
        ("[archive]\nurl = \"s3://footage\"\nendpoint = \"https://s3.example.net/bucket\"", "is not http(s)://HOST[:PORT]"),
        ("[archive]\nurl = \"s3://footage\"\nupload_rate = \"fast\"", "vigil.toml:3: error: upload_rate \"fast\" is not a rate"),
        ("[archive]\nurl = \"s3://footage\"\nkeep_local_days = -1", "keep_local_days = -1 is out of range"),
        ("[archive]\nurl = \"s3://footage\"\npart_size = \"1MiB\"", "part_size must be 5 MiB to 512 MiB"),
        ("[archive]\nurl = \"s3://footage\"\nkeep_local = 3", "keep_local"),
        ("[archive]\nurl = \"s3://footage\"\ndrain_seconds = 301", "vigil.toml:3: error: drain_seconds = 301 is out of range"),
        ("[archive]\nurl = \"s3://footage\"\ndrain_seconds = -1", "vigil.toml:3: error: drain_seconds = -1 is out of range"),
        ("[archive]\nurl = \"s3://footage\"\ndrain_seconds = 2.5", "vigil.toml:3: error: drain_seconds must be a whole number"),
    ])
    func everyMistakeIsAnErrorAtItsLine(text: String, message: String) {
        let said = errors(text, environment: ["AWS_ACCESS_KEY_ID": "A", "AWS_SECRET_ACCESS_KEY": "B"])
        #expect(said.contains(message), "\(said)")
    }

    @Test func missingKeysOrAKeyFileOthersCanReadAreRefused() throws {
        let none = errors("[archive]\nurl = \"s3://footage\"")
        #expect(none.contains("[archive] has no keys") && none.contains("credentials_file"), "\(none)")
        let dir = try TemporaryDirectory("vigil-archive-keys")
        defer { dir.remove() }
        let readable = try credentials(dir, mode: 0o644)
        let shared = errors("[archive]\nurl = \"s3://footage\"\ncredentials_file = \"\(readable)\"")
        #expect(shared.contains("vigil.toml:3: error: credentials_file \(readable) can be read or changed by other users"), "\(shared)")
        #expect(shared.contains("chmod 600"))
        let empty = dir.path + "/empty"
        try "[default]\n".write(toFile: empty, atomically: true, encoding: .utf8)
        chmod(empty, 0o600)
        #expect(errors("[archive]\nurl = \"s3://footage\"\ncredentials_file = \"\(empty)\"").contains("has no aws_access_key_id"))
    }

    @Test(arguments: [("20 Mbit/s", 2_500_000), ("2.5 MB/s", 2_500_000), ("500 kbit/s", 62_500), ("1MiB/s", 1_048_576)])
    func ratesAreReadInBitsOrBytes(text: String, bytes: Int) {
        #expect(ArchiveSettings.parseRate(text) == bytes)
    }

    @Test(arguments: ["", "20", "-1 MB/s", "0 kbit/s", "1e400 MB/s", "nan MB/s", "10 bit/s"])
    func aRateThatIsNotOneIsRefused(text: String) {
        #expect(ArchiveSettings.parseRate(text) == nil)
    }
}

/// The archive's queue in the index, and what storage does with files the bucket holds.
@Suite struct ArchiveQueueTests {
    /// A file of `bytes` bytes and its complete entry, ended at `endNanos`.
    private func place(_ keeper: StorageKeeper, endNanos: Int64, bytes: Int = 100) throws -> String {
        let stamp = StorageLayout.utcStamp(endNanos)
        let relative = "a/video/\(stamp.day)/a-\(stamp.stamp).mp4"
        try FileManager.default.createDirectory(atPath: "\(keeper.root)/a/video/\(stamp.day)", withIntermediateDirectories: true)
        try Data(count: bytes).write(to: URL(fileURLWithPath: "\(keeper.root)/\(relative)"))
        try keeper.index.put(RecordingIndex.Entry(
            kind: .segment, camera: "a", path: relative, startNanos: endNanos - second, endNanos: endNanos, frames: 10, bytes: Int64(bytes),
            codec: "h264", width: 160, height: 120, state: .complete))
        return relative
    }

    private func exists(_ keeper: StorageKeeper, _ relative: String) -> Bool { FileManager.default.fileExists(atPath: "\(keeper.root)/\(relative)") }

    @Test func aFileGoesFromQueuedToArchivedAndListingsSayWhereItIs() async throws {
        let dir = try TemporaryDirectory("vigil-archive-queue")
        defer { dir.remove() }
        let keeper = try StorageKeeper.open(root: dir.path, policy: RetentionPolicy(), events: RecorderEvents())
        let now = SystemClocks.wallNanos()
        let earlier = try place(keeper, endNanos: now - 60 * second, bytes: 300)
        let woken = WakeCounter()
        #expect(try await keeper.startArchiving(keepLocalDays: nil) { woken.count() } == 1, "what was recorded before is queued at once")
        let index = keeper.index
        #expect(try index.archiveBacklog() == (1, 300))
        try index.startUpload(path: earlier, bytes: 300, sha256: "", uploadID: "upload-1", partSize: 5 << 20)
        try index.addArchivePart(path: earlier, RecordingIndex.ArchivePart(number: 1, bytes: 200, etag: "\"e1\"", sha256: "ab"))
        #expect(try index.archiveQueue(limit: 10).first?.uploadID == "upload-1")
        #expect(try index.archiveParts(path: earlier).map(\.number) == [1])
        try index.markArchived(path: earlier, nowNanos: now)
        #expect(try index.archiveParts(path: earlier).isEmpty && index.archiveBacklog() == (0, 0))
        #expect(try index.entry(path: earlier)?.location == .both)
        try index.markLocalCopyGone(path: earlier)
        #expect(try index.entries().first?.location == .archive)
        let text = try RecordingsListing(index: index, camera: nil, kind: .segment, from: nil, to: nil).text()
        #expect(text.contains("\(earlier)  [archive]"), "\(text)")
        #expect(try RecordingsListing(index: index, camera: nil, kind: .segment, from: nil, to: nil).json().contains("\"location\" : \"archive\""))
    }

    /// What a stop left in the queue goes up first at the next start: before the files that start
    /// queues, even one recorded earlier (whose name sorts first too). The queue's ends name it.
    @Test func whatAStopLeftGoesFirstAtTheNextStart() async throws {
        let dir = try TemporaryDirectory("vigil-archive-order")
        defer { dir.remove() }
        let keeper = try StorageKeeper.open(root: dir.path, policy: RetentionPolicy(), events: RecorderEvents())
        let now = SystemClocks.wallNanos()
        let leftover = try place(keeper, endNanos: now - 10 * second)
        // Queued an hour ago by the run before, which stopped before it was uploaded.
        try keeper.index.enqueueForArchive(path: leftover, bytes: 100, nowNanos: now - 3_600 * second)
        let recordedEarlier = try place(keeper, endNanos: now - 1_200 * second)
        let earlierStart = try #require(try keeper.index.entry(path: recordedEarlier)).startNanos
        let leftoverStart = try #require(try keeper.index.entry(path: leftover)).startNanos
        #expect(recordedEarlier < leftover && earlierStart < leftoverStart, "the order by name or by time would put it first")
        #expect(try await keeper.startArchiving(keepLocalDays: nil) {} == 1, "only the file not queued yet is queued now")
        #expect(try keeper.index.archiveQueue(limit: 10).map(\.path) == [leftover, recordedEarlier])
        let ends = try #require(try keeper.index.archiveQueueEnds())
        #expect(ends.oldest == leftover && ends.newest == recordedEarlier, "\(ends)")
        try keeper.index.markArchived(path: leftover, nowNanos: now)
        try keeper.index.markArchived(path: recordedEarlier, nowNanos: now)
        #expect(try keeper.index.archiveQueueEnds() == nil, "nothing waits")
    }

    @Test func retentionDeletesOnlyTheLocalCopyOfAnArchivedFileAndNeverTheBucketsOnly() async throws {
        let dir = try TemporaryDirectory("vigil-archive-retention")
        defer { dir.remove() }
        var policy = RetentionPolicy()
        policy.videos = RetentionLimits(maxAgeDays: 2)
        let keeper = try StorageKeeper.open(root: dir.path, policy: policy, events: RecorderEvents())
        let now = SystemClocks.wallNanos()
        let archivedOld = try place(keeper, endNanos: now - 5 * day)
        let localOld = try place(keeper, endNanos: now - 4 * day)
        let recent = try place(keeper, endNanos: now - 60 * second)
        _ = try await keeper.startArchiving(keepLocalDays: nil) {}
        try keeper.index.markArchived(path: archivedOld, nowNanos: now)
        keeper.enforceRetention(nowWall: now)
        #expect(!exists(keeper, archivedOld) && !exists(keeper, localOld) && exists(keeper, recent))
        let left = try keeper.index.entries().map(\.path)
        #expect(left.contains(archivedOld), "an archived recording stays listed when its local copy goes")
        #expect(!left.contains(localOld))
        #expect(try keeper.index.entry(path: archivedOld)?.location == .archive)
        #expect(try keeper.index.archiveItem(path: localOld) == nil, "a deleted file leaves the queue")
        // Again: nothing more to do for a file only the bucket holds.
        keeper.enforceRetention(nowWall: now + day)
        #expect(try keeper.index.entry(path: archivedOld)?.location == .archive)
    }

    @Test func keepLocalDaysDeletesLocalCopiesOfArchivedFilesOnly() async throws {
        let dir = try TemporaryDirectory("vigil-archive-keep")
        defer { dir.remove() }
        let keeper = try StorageKeeper.open(root: dir.path, policy: RetentionPolicy(), events: RecorderEvents())
        let now = SystemClocks.wallNanos()
        let archived = try place(keeper, endNanos: now - 60 * second)
        let waiting = try place(keeper, endNanos: now - 50 * second)
        _ = try await keeper.startArchiving(keepLocalDays: 0) {}
        try keeper.index.markArchived(path: archived, nowNanos: now)
        keeper.archived()
        await keeper.flush()
        #expect(!exists(keeper, archived) && exists(keeper, waiting))
        #expect(try keeper.index.entry(path: archived)?.location == .archive)
    }

    @Test func recoveryTakesAnArchivedFileWhoseCopyIsGoneForArchivedNotMissing() async throws {
        let dir = try TemporaryDirectory("vigil-archive-recovery")
        defer { dir.remove() }
        let keeper = try StorageKeeper.open(root: dir.path, policy: RetentionPolicy(), events: RecorderEvents())
        let now = SystemClocks.wallNanos()
        let archived = try place(keeper, endNanos: now - 60 * second)
        let lost = try place(keeper, endNanos: now - 50 * second)
        _ = try await keeper.startArchiving(keepLocalDays: nil) {}
        try keeper.index.markArchived(path: archived, nowNanos: now)
        for path in [archived, lost] { try FileManager.default.removeItem(atPath: "\(dir.path)/\(path)") }
        let reopened = try StorageKeeper.open(root: dir.path, policy: RetentionPolicy(), events: RecorderEvents())
        #expect(reopened.recovery.missing == 1, "\(reopened.recovery)")
        #expect(try reopened.index.entry(path: archived)?.state == .complete)
        #expect(try reopened.index.entry(path: archived)?.location == .archive)
        #expect(try reopened.index.entry(path: lost)?.state == .missing)
        let verified = try IndexVerification(index: reopened.index, selection: .init())
        // The archived file is no problem (the lost one is listed as missing, which verify accepts).
        #expect(verified.problems.isEmpty, "\(verified.problems)")
    }
}

/// Counts the uploader's wake-ups.
private final class WakeCounter: Sendable {
    private let n = Mutex(0)
    func count() { n.withLock { $0 += 1 } }
}

/// A disk filling while uploads are behind: the free-space sweep deletes the local copies the
/// bucket holds first, and says so when it must delete a recording the bucket does not hold yet.
@Suite(.enabled(if: getuid() == 0, "needs root to mount a size-limited tmpfs"))
struct ArchiveFreeSpaceTests {
    @Test func archivedCopiesGoFirstAndDeletingOneNotArchivedIsSaid() async throws {
        let log = CapturedLog.shared
        let small = try SmallDisk("vigil-archive-full")
        defer { small.remove() }
        var policy = RetentionPolicy()
        policy.minFreePercent = 0
        policy.minFreeBytes = 2_621_440
        let keeper = try StorageKeeper.open(root: small.path, policy: policy, events: RecorderEvents())
        let now = SystemClocks.wallNanos()
        func place(_ endNanos: Int64) throws -> String {
            let stamp = StorageLayout.utcStamp(endNanos)
            let relative = "a/video/\(stamp.day)/a-\(stamp.stamp).mp4"
            try FileManager.default.createDirectory(atPath: "\(small.path)/a/video/\(stamp.day)", withIntermediateDirectories: true)
            try Data(count: 300_000).write(to: URL(fileURLWithPath: "\(small.path)/\(relative)"))
            try keeper.index.put(RecordingIndex.Entry(
                kind: .segment, camera: "a", path: relative, startNanos: endNanos - second, endNanos: endNanos, frames: 10, bytes: 300_000,
                codec: "h264", width: 160, height: 120, state: .complete))
            return relative
        }
        // Oldest first: one not archived (the uploads are behind), two archived, a newer one not archived.
        let waitingOld = try place(now - 40 * second)
        let archived = [try place(now - 30 * second), try place(now - 20 * second)]
        let waitingNew = try place(now - 10 * second)
        _ = try await keeper.startArchiving(keepLocalDays: nil) {}
        for path in archived { try keeper.index.markArchived(path: path, nowNanos: now) }
        // Someone else's file leaves 500 kB, and the floor is one the two archived copies cannot
        // meet alone, but one more file can (under the cap of half the disk).
        let room = try #require(FreeSpaceFloor.space(small.path)).free
        try Data(count: Int(room) - 500_000).write(to: URL(fileURLWithPath: "\(small.path)/filler"))
        let free = try #require(FreeSpaceFloor.space(small.path)).free
        policy.minFreeBytes = free + 2 * 300_000 + 150_000
        keeper.update(policy)
        await keeper.flush()
        keeper.checkFreeSpace(SystemClocks.monotonicNanos())
        let exists = { (path: String) in FileManager.default.fileExists(atPath: "\(small.path)/\(path)") }
        #expect(!archived.contains(where: exists), "the archived local copies were not deleted first")
        #expect(try archived.allSatisfy { try keeper.index.entry(path: $0)?.location == .archive }, "archived recordings stay listed")
        #expect(!exists(waitingOld), "there was still too little room: the oldest recording not archived goes")
        #expect(exists(waitingNew))
        let said = log.messages(.warning, containing: "not yet archived to make room")
        #expect(said.count == 1 && said.first?.contains(waitingOld) == true, "\(said)")
        #expect(said.first?.contains("the archive queue is behind by 1 file(s)") == true, "\(said)")
    }
}
