import Foundation

/// A size-limited tmpfs (4 MiB unless `size` says otherwise, as `mount -o size=` reads it): a
/// disk that fills in seconds, for the full-disk tests. Mounting needs root (CI runs as root here).
public struct SmallDisk: Sendable {
    public let path: String
    private let directory: TemporaryDirectory

    public init(_ prefix: String, size: String = "4m") throws {
        directory = try TemporaryDirectory(prefix)
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
}
