import Archive
import CaptureTesting
import Foundation
import Recorder
import Testing

/// The bucket's keys (`ArchiveKeys.swift`): with `[cluster]` each node's files in a folder of
/// its own under the prefix, and a path read from outside accepted only under the root.
@Suite struct ArchiveKeysTests {
    private func parse(_ text: String) throws -> Configuration {
        try ConfigurationLoader.parse(text: text + "\n[cameras.a]\ndevice = \"synthetic-0\"\n", path: "vigil.toml", environment: [:])
    }

    private func credentials(_ dir: TemporaryDirectory) throws -> String {
        let path = dir.path + "/s3"
        try "[default]\naws_access_key_id = AKIDTEST\naws_secret_access_key = very-secret-key\n".write(toFile: path, atomically: true, encoding: .utf8)
        chmod(path, 0o600)
        return path
    }

    /// With `[cluster]` each node's keys are in a folder of its own under the prefix.
    @Test func withAClusterEachNodeHasAFolderOfItsOwn() throws {
        let dir = try TemporaryDirectory("vigil-archive-config")
        defer { dir.remove() }
        let archive = "[archive]\nurl = \"s3://my-footage/site\"\ncredentials_file = \"\(try credentials(dir))\"\n"
        let cluster = try #require(try parse(archive + "[cluster]\ndatabase = \"postgresql://vigil@127.0.0.1/vigil\"\nnode = \"node-b\"").archive)
        #expect(cluster.prefix == "site/node-b" && cluster.sitePrefix == "site" && cluster.node == "node-b")
        #expect(cluster.key(for: "porch/video/a.mp4") == "site/node-b/porch/video/a.mp4")
        #expect(cluster.key(for: "porch/video/a.mp4", node: "node-c") == "site/node-c/porch/video/a.mp4")
        #expect(cluster.url == "s3://my-footage/site/node-b")
        let alone = try #require(try parse(archive).archive)
        #expect(alone.prefix == "site" && alone.node == nil && alone.key(for: "porch/video/a.mp4") == "site/porch/video/a.mp4")
        // No prefix: the node's folder is at the bucket's top.
        let top = try #require(try parse(archive.replacingOccurrences(of: "/site", with: "") + "[cluster]\ndatabase = \"postgresql://vigil@127.0.0.1/vigil\"\nnode = \"node-b\"").archive)
        #expect(top.key(for: "porch/video/a.mp4") == "node-b/porch/video/a.mp4" && top.keyBeforeCluster(for: "porch/video/a.mp4") == "porch/video/a.mp4")
        // A path from outside names a file under the root, or nothing.
        #expect(ArchiveSettings.isStoragePath("porch/video/a.mp4"))
        for bad in ["", "/etc/passwd", "porch/../../node-a/x.mp4", "..", String(repeating: "a", count: 1025)] {
            #expect(!ArchiveSettings.isStoragePath(bad), "\(bad.prefix(40))")
        }
    }

    /// A key maps back to its path only under the prefix (a trailing slash in the URL is not part of it).
    @Test func aKeyIsAPathOnlyUnderThePrefix() throws {
        let dir = try TemporaryDirectory("vigil-archive-keys")
        defer { dir.remove() }
        let a = try #require(try parse("[archive]\nurl = \"s3://my-footage/site/one/\"\ncredentials_file = \"\(try credentials(dir))\"\n").archive)
        #expect(a.key(for: "a/video/x.mp4") == "site/one/a/video/x.mp4" && a.path(for: "site/one/a/video/x.mp4") == "a/video/x.mp4")
        #expect(a.path(for: "site/onex/a.mp4") == nil)
    }
}
