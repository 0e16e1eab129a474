import CaptureTesting
import Foundation
import Testing

/// Recordings are not world-readable: files 0640 and folders 0750 by default, or what
/// `[storage] file_mode` says, whatever the umask vigil was started with.
@Suite(.timeLimit(.minutes(2))) struct RecordingFileModeTests {
    /// Every file and folder under `root` (the root included) with its permission bits.
    private func modes(under root: String) -> [(path: String, isDirectory: Bool, mode: mode_t)] {
        var found: [(String, Bool, mode_t)] = []
        func visit(_ path: String) {
            var st = stat()
            guard lstat(path, &st) == 0 else { return }
            let isDirectory = st.st_mode & S_IFMT == S_IFDIR
            found.append((path, isDirectory, st.st_mode & 0o777))
            if isDirectory { for name in (try? FileManager.default.contentsOfDirectory(atPath: path)) ?? [] { visit(path + "/" + name) } }
        }
        visit(root)
        return found
    }

    @Test func recordingsAreReadableByOwnerAndGroupOnlyByDefault() throws {
        let dir = try TemporaryDirectory()
        defer { dir.remove() }
        let data = dir.path + "/data"
        // Started with the permissive umask of an interactive shell.
        let previous = umask(0o022)
        defer { umask(previous) }
        let result = VigilBinary.run(["run", "--data", data, "--duration", "3"])
        #expect(result.status == 0, "\(result.errorOutput)")
        let entries = modes(under: data)
        #expect(entries.contains { $0.path.hasSuffix(".mp4") })
        #expect(entries.contains { $0.path.hasSuffix(".sqlite3") })
        for entry in entries {
            #expect(entry.mode == (entry.isDirectory ? 0o750 : 0o640), "\(entry.path): 0\(String(entry.mode, radix: 8))")
        }
    }

    @Test func fileModeInTheConfigurationIsHonoured() throws {
        let dir = try TemporaryDirectory()
        defer { dir.remove() }
        let data = dir.path + "/data"
        let file = dir.path + "/vigil.toml"
        try """
            [storage]
            root = "\(data)"
            file_mode = "0600"
            [cameras.a]
            device = "synthetic-0"
            size = "160x120"
            fps = 10
            [[record]]
            camera = "a"
            [[timelapse]]
            camera = "a"
            interval_seconds = 1
            """.write(toFile: file, atomically: true, encoding: .utf8)
        let check = VigilBinary.run(["check-config", file])
        #expect(check.output.contains("(files 0600, folders 0700)"), "\(check.output)")
        let result = VigilBinary.run(["run", "--config", file, "--duration", "3"])
        #expect(result.status == 0, "\(result.errorOutput)")
        let entries = modes(under: data)
        #expect(entries.contains { $0.path.hasSuffix(".jpg") })
        for entry in entries {
            #expect(entry.mode == (entry.isDirectory ? 0o700 : 0o600), "\(entry.path): 0\(String(entry.mode, radix: 8))")
        }
    }
}
