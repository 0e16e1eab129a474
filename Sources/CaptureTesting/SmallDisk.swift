import Foundation
import Glibc

/// A size-limited tmpfs (4 MiB unless `size` says otherwise, as `mount -o size=` reads it): a
/// disk that fills in seconds, for the full-disk tests. Mounting needs root (CI runs as root here).
///
/// Its folder names the test process (`…-smalldisk-PID-…`): a process killed before `remove()`
/// leaves its mount behind, and the next small disk unmounts those whose process is gone. Left
/// mounted, such 256 KiB disks were found to make a later full-disk test fail.
public struct SmallDisk: Sendable {
    public let path: String
    private let directory: TemporaryDirectory

    public init(_ prefix: String, size: String = "4m") throws {
        Self.removeAbandoned()
        directory = try TemporaryDirectory("\(prefix)-smalldisk-\(getpid())")
        path = directory.path
        let mount = RecordingInspector.run("/bin/mount", ["-t", "tmpfs", "-o", "size=\(size)", "tmpfs", path])
        if mount.status != 0 {
            directory.remove()
            throw MountFailed(output: mount.errorOutput)
        }
    }

    public struct MountFailed: Error { public let output: String }

    /// Unmounts it and removes its folder.
    public func remove() {
        _ = RecordingInspector.run("/bin/umount", [path])
        directory.remove()
    }

    /// Unmounts and removes the small disks of test processes that no longer run.
    private static func removeAbandoned() {
        guard let mounts = try? String(contentsOfFile: "/proc/self/mounts", encoding: .utf8) else { return }
        for line in mounts.split(separator: "\n") {
            let fields = line.split(separator: " ")
            guard fields.count > 2, fields[2] == "tmpfs", fields[1].hasPrefix("/tmp/"),
                  let match = fields[1].firstMatch(of: /-smalldisk-(\d+)-[A-Za-z0-9]+$/), let pid = pid_t(match.1),
                  kill(pid, 0) != 0 && errno == ESRCH else { continue }
            let path = String(fields[1])
            if RecordingInspector.run("/bin/umount", [path]).status == 0 { try? FileManager.default.removeItem(atPath: path) }
        }
    }
}
