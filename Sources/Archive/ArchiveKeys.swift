import Recorder

/// Where a file of the storage root lives in the bucket: the key a path is uploaded under (in
/// the node's own folder with `[cluster]`), the key it had before the node joined, and the path
/// a listed key stands for. Only the archive names keys; the settings only say the prefix.
extension ArchiveSettings {
    /// The bucket's key for a path relative to the storage root.
    public func key(for path: String) -> String { Self.join(prefix, path) }

    /// The key of `path` in `node`'s folder (another node's recording, read from the bucket when
    /// that node does not answer); nil: this node's key.
    public func key(for path: String, node: String?) -> String {
        node.map { Self.join(Self.join(sitePrefix, $0), path) } ?? key(for: path)
    }

    /// The key `path` had before this node joined a cluster (the files it archived alone); nil
    /// without `[cluster]`, where it is `key(for:)`.
    public func keyBeforeCluster(for path: String) -> String? { node == nil ? nil : Self.join(sitePrefix, path) }

    /// Whether `path`, read from outside (a bucket's listing, another node's catalogue row), can
    /// name a file under the storage root: relative, no `..`, at most S3's 1,024-byte key.
    public static func isStoragePath(_ path: String) -> Bool {
        !path.isEmpty && path.utf8.count <= 1024 && !path.hasPrefix("/") && !path.split(separator: "/").contains("..")
    }

    /// The path relative to the storage root of a key under the prefix; nil for a key outside it.
    public func path(for key: String) -> String? {
        if prefix.isEmpty { return key }
        guard key.hasPrefix(prefix + "/") else { return nil }
        return String(key.dropFirst(prefix.count + 1))
    }
}
