import Capture
import CaptureTesting
import Foundation
import Glibc
import Plumbing
@testable import Recorder
import Testing

/// Files on disk are outside input: start-up recovery never trusts their names, dates or
/// modification times, and never follows a link into a loop. Each of these used to stop Vigil
/// at every start (a trap converting 2263 to nanoseconds, or a walk of about 2^40 stats).
@Suite(.timeLimit(.minutes(1))) struct HostileFilesTests {
    private func write(_ root: String, _ relative: String, bytes: Int = 100) throws {
        try FileManager.default.createDirectory(atPath: "\(root)/\((relative as NSString).deletingLastPathComponent)", withIntermediateDirectories: true)
        try Data(count: bytes).write(to: URL(fileURLWithPath: "\(root)/\(relative)"))
    }

    /// Sets a file's modification time to `seconds` since 1970 (ext4 and tmpfs hold years past 2262).
    private func setModified(_ path: String, seconds: Int) throws {
        var times = [timespec(tv_sec: seconds, tv_nsec: 0), timespec(tv_sec: seconds, tv_nsec: 0)]
        guard utimensat(AT_FDCWD, path, &times, 0) == 0 else { throw POSIXError(.EINVAL) }
        var st = stat()
        stat(path, &st)
        try #require(st.st_mtim.tv_sec == seconds, "this file system cannot hold that time")
    }

    @Test func filesNamedForTimesPast2262AreQuarantinedWithALogLine() throws {
        let log = CapturedLog.shared
        let dir = try TemporaryDirectory("vigil-hostile-names")
        defer { dir.remove() }
        let named = ["porch/video/2263-01-01/porch-22630101T000000Z.mp4", "porch/stills/2263-01-01/porch-22630101T000000Z.jpg",
                     "porch/video/9999-12-31/porch-99991231T235959Z.mp4.partial", "porch/timelapse/porch-9999-12-31.mp4"]
        for relative in named { try write(dir.path, relative) }
        let keeper = try StorageKeeper.open(root: dir.path, policy: RetentionPolicy(), events: RecorderEvents())
        #expect(keeper.recovery.quarantined == named.count)
        for relative in named {
            #expect(!FileManager.default.fileExists(atPath: "\(dir.path)/\(relative)"), "\(relative) left in place")
            #expect(FileManager.default.fileExists(atPath: "\(dir.path)/.quarantine/\(relative)"), "\(relative) not in the quarantine")
            #expect(!log.messages(.warning, containing: "\(relative) is named for a time outside 1970-01-01 to 2261-12-31").isEmpty, "\(relative)")
        }
        #expect(try keeper.index.entries(states: [.quarantined]).count == named.count)
        // The next start finds them in the quarantine, indexed, and starts as well.
        let again = try StorageKeeper.open(root: dir.path, policy: RetentionPolicy(), events: RecorderEvents())
        #expect(again.recovery.quarantined == 0 && again.recovery.missing == 0)
        #expect(try again.index.entries(states: [.quarantined]).count == named.count)
    }

    @Test func modificationTimesPast2262AreNeverConverted() throws {
        let log = CapturedLog.shared
        let dir = try TemporaryDirectory("vigil-hostile-mtime")
        defer { dir.remove() }
        // A file in the quarantine named like nothing Vigil writes, last modified in 2300: the
        // index needs an instant for it and must not take it from that time.
        try write(dir.path, ".quarantine/notes.bin")
        try setModified("\(dir.path)/.quarantine/notes.bin", seconds: 10_413_792_000)
        // A still with a good name and the same modification time is adopted by its name.
        let still = "porch/stills/2026-11-22/porch-20261122T065700Z.jpg"
        try write(dir.path, still)
        try setModified("\(dir.path)/\(still)", seconds: 10_413_792_000)
        let before = SystemClocks.wallNanos()
        let keeper = try StorageKeeper.open(root: dir.path, policy: RetentionPolicy(), events: RecorderEvents())
        let quarantined = try #require(try keeper.index.entries(states: [.quarantined]).first)
        #expect(quarantined.path == ".quarantine/notes.bin")
        #expect(quarantined.startNanos >= before && quarantined.startNanos <= SystemClocks.wallNanos(), "listed as of now")
        #expect(!log.messages(.warning, containing: ".quarantine/notes.bin has neither a name nor a modification time within").isEmpty)
        #expect(try keeper.index.entries(kind: .still).map(\.startNanos) == [1_795_330_620 * 1_000_000_000])
    }

    @Test func linksAreNotFollowedButACameraFolderMayLiveElsewhere() throws {
        let dir = try TemporaryDirectory("vigil-hostile-links")
        defer { dir.remove() }
        let elsewhere = try TemporaryDirectory("vigil-other-disk")
        defer { elsewhere.remove() }
        let fm = FileManager.default
        // Loops: each link doubles the paths a walk that follows links would take.
        try fm.createDirectory(atPath: "\(dir.path)/.quarantine/porch", withIntermediateDirectories: true)
        for name in ["a", "b"] { try fm.createSymbolicLink(atPath: "\(dir.path)/.quarantine/\(name)", withDestinationPath: ".") }
        for name in ["c", "d"] { try fm.createSymbolicLink(atPath: "\(dir.path)/.quarantine/porch/\(name)", withDestinationPath: "..") }
        try write(dir.path, ".quarantine/porch/old.mp4.partial")
        // A link where a day's folder or a recording should be is not followed either.
        try write(elsewhere.path, "2026-11-22/porch-20261122T065800Z.jpg")
        try fm.createDirectory(atPath: "\(dir.path)/porch/stills", withIntermediateDirectories: true)
        try fm.createSymbolicLink(atPath: "\(dir.path)/porch/stills/2026-11-22", withDestinationPath: "\(elsewhere.path)/2026-11-22")
        // A camera's whole folder on another disk is followed: below it the walk has a fixed depth.
        try write(elsewhere.path, "yard/stills/2026-11-22/yard-20261122T065700Z.jpg")
        try fm.createSymbolicLink(atPath: "\(dir.path)/yard", withDestinationPath: "\(elsewhere.path)/yard")
        let keeper = try StorageKeeper.open(root: dir.path, policy: RetentionPolicy(), events: RecorderEvents())
        #expect(try keeper.index.entries(states: [.quarantined]).map(\.path) == [".quarantine/porch/old.mp4.partial"])
        #expect(try keeper.index.entries(kind: .still).map(\.path) == ["yard/stills/2026-11-22/yard-20261122T065700Z.jpg"])
        #expect(keeper.recovery.adopted == 1)
    }
}
