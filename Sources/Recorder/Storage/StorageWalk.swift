import Capture
import Foundation
import Glibc
import Logging
import Synchronization

/// Directory listings of a storage root that skip what cannot be read, with regular files and
/// folders apart: what start-up recovery and `vigil verify` walk. Symbolic links are not followed
/// (two `ln -s . x` would make the walk endless), except a camera's folder directly under the
/// root, which may be a link to another disk: below it the walk has a fixed depth.
struct StorageWalk {
    let root: String
    let logger: Logger
    /// What the walk is for, at the start of its log lines ("recovery", "verify").
    var purpose = "recovery"
    /// Folders that exist but could not be listed: what they hold is unknown, not gone.
    let unreadable = UnreadableFolders()

    func folders(in relative: String) -> [String] { entries(in: relative, folders: true) }
    func files(in relative: String) -> [String] { entries(in: relative, folders: false) }

    /// Every regular file below `relative`, as paths relative to the root.
    func files(under relative: String) -> [String] {
        files(in: relative).map { "\(relative)/\($0)" } + folders(in: relative).flatMap { files(under: "\(relative)/\($0)") }
    }

    /// The camera folders under the root (the quarantine and other dot folders are not cameras).
    func cameraFolders() -> [String] { folders(in: "").filter { !$0.hasPrefix(".") } }

    /// The folders of a camera's folder that hold recordings, with their kind: daily videos lie
    /// directly in their folder, the others in one folder per UTC day.
    func recordingDirectories(of cameraFolder: String) -> [(kind: RecordingIndex.Kind, directory: String)] {
        RecordingIndex.Kind.allCases.flatMap { kind in
            let base = "\(cameraFolder)/\(kind.folder)"
            let directories = kind == .timelapse ? [base] : folders(in: base).map { "\(base)/\($0)" }
            return directories.map { (kind, $0) }
        }
    }

    private func entries(in relative: String, folders: Bool) -> [String] {
        let directory = relative.isEmpty ? root : StorageLayout(root: root).absolute(relative)
        let names: [String]
        do {
            names = try FileManager.default.contentsOfDirectory(atPath: directory)
        } catch {
            // A folder that is not there holds nothing (a camera without stills); one that is there
            // but cannot be listed (permissions, an I/O error) hides its files: said, and remembered.
            if !Self.isAbsent(directory) { hidden(relative, directory, "cannot be listed (\(error.localizedDescription))") }
            return []
        }
        return names.sorted().filter { name in
            let path = "\(directory)/\(name)"
            var st = stat()
            guard lstat(path, &st) == 0 else {
                // Gone since the listing: nothing. Anything else (EACCES, EIO): it hides what it is.
                if errno != ENOENT { hidden(relative.isEmpty ? name : "\(relative)/\(name)", path, "cannot be looked at (\(String(cString: strerror(errno))))") }
                return false
            }
            if (st.st_mode & S_IFMT) == S_IFLNK {
                if relative.isEmpty && folders && !name.hasPrefix(".") && stat(path, &st) == 0 && (st.st_mode & S_IFMT) == S_IFDIR { return true }
                if !relative.isEmpty || !folders {
                    logger.notice("\(purpose): \(relative.isEmpty ? name : "\(relative)/\(name)") is a symbolic link; not followed")
                }
                return false
            }
            return (st.st_mode & S_IFMT) == (folders ? S_IFDIR : S_IFREG)
        }
    }

    /// Only a path that is not there (ENOENT, ENOTDIR) holds nothing; one that cannot be looked
    /// at (EACCES on a folder above it, EIO) may.
    private static func isAbsent(_ path: String) -> Bool {
        var st = stat()
        return lstat(path, &st) != 0 && (errno == ENOENT || errno == ENOTDIR)
    }

    private func hidden(_ relative: String, _ path: String, _ why: String) {
        if unreadable.add(relative) {
            logger.error("\(purpose): \(path) \(why); the recordings in it are left as the index has them")
        }
    }
}

/// The folders of a walk that could not be listed (relative to the root; "" is the root itself).
final class UnreadableFolders: Sendable {
    private let folders = Mutex<Set<String>>([])

    /// Adds `relative`; false if it was there already.
    func add(_ relative: String) -> Bool { folders.withLock { $0.insert(relative).inserted } }

    /// Whether `path` is, or lies in, something that could not be looked at: its absence proves nothing.
    func hide(_ path: String) -> Bool {
        folders.withLock { $0.contains { $0.isEmpty || path == $0 || path.hasPrefix($0 + "/") } }
    }
}
