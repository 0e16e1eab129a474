import CaptureTesting
import Foundation
@testable import Recorder
import Testing

/// A folder recovery cannot list (permissions, an I/O error) hides its recordings; it does not
/// prove them gone. Before, the failed listing read as an empty folder and every recording in it
/// was marked missing (and dropped from listings). Root reads every folder, so the second run is
/// made as `nobody` (setpriv), for whom the folder is closed.
@Suite(.timeLimit(.minutes(2))) struct UnlistableFolderTests {
    private func config(root: String, camera: String, device: Int) -> String {
        """
        [storage]
        root = "\(root)"

        \(syntheticCamera(camera, device: device))
        [[record]]
        camera = "\(camera)"
        segment_seconds = 1
        """
    }

    /// 000: the folder cannot be listed; 644: it can, but what is in it cannot be looked at.
    @Test(arguments: ["000", "644"]) func recordingsInAFolderThatCannotBeListedAreNotMarkedMissing(mode: String) async throws {
        let dir = try TemporaryDirectory()
        defer {
            _ = RecordingInspector.run("/bin/chmod", ["-R", "u+rwx", dir.path])
            dir.remove()
        }
        let data = dir.path + "/data"
        try config(root: data, camera: "a", device: 0).write(toFile: dir.path + "/a.toml", atomically: true, encoding: .utf8)
        try config(root: data, camera: "b", device: 1).write(toFile: dir.path + "/b.toml", atomically: true, encoding: .utf8)
        let first = VigilBinary.run(["run", "--config", dir.path + "/a.toml", "--duration", "2.5"])
        #expect(first.status == 0, "\(first.errorOutput)")
        let before = try RecordingIndex(root: data).entries(camera: "a", kind: .segment)
        #expect(before.count >= 2 && before.allSatisfy { $0.state == .complete }, "\(before)")
        // Camera a's video folder is closed to nobody; camera b records as nobody. (Modes are
        // set outright: another test in this process may have set a umask of 077.)
        for (path, mode) in [(dir.path, "755"), (dir.path + "/b.toml", "644"), (data + "/a/video", mode)] {
            #expect(RecordingInspector.run("/bin/chmod", [mode, path]).status == 0)
        }
        #expect(RecordingInspector.run("/bin/chown", ["-R", "65534:65534", data]).status == 0)
        let second = RecordingInspector.run(
            "/usr/bin/setpriv", ["--reuid=65534", "--regid=65534", "--clear-groups", VigilBinary.path, "run", "--config", dir.path + "/b.toml", "--duration", "2.5"])
        #expect(second.status == 0, "\(second.errorOutput)")
        #expect(second.errorOutput.contains("\(data)/a/video") && second.errorOutput.contains("the recordings in it are left as the index has them"),
                "\(second.errorOutput)")
        #expect(second.output.contains("in folders that cannot be listed (left as they were)"), "\(second.output)")
        #expect(RecordingInspector.run("/bin/chmod", ["755", data + "/a/video"]).status == 0)
        let after = try RecordingIndex(root: data).entries(camera: "a", kind: .segment)
        #expect(after.map(\.state) == before.map(\.state), "\(after)")
        #expect(try !RecordingIndex(root: data).entries(camera: "b", kind: .segment).isEmpty)
    }
}
