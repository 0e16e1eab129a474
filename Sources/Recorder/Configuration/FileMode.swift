import Glibc

/// Who may read recordings: the mode of every file Vigil writes under its storage root (default
/// 0640: the owner reads and writes, its group reads, others nothing), and of its folders (the
/// same with search rights where there is read: 0750). Applied as the process's umask, so every
/// writer (FFmpeg's muxer, SQLite, the still writer, folder creation) honours it alike.
public struct FileMode: Sendable, Equatable, CustomStringConvertible {
    public let file: mode_t

    public static let standard = FileMode(validated: 0o640)

    private init(validated file: mode_t) { self.file = file }

    /// An octal mode such as "0640" or "640": the owner must be able to read and write, and no
    /// execute bits (recordings are not programs). Nil for anything else.
    public init?(octal text: String) {
        guard (3...4).contains(text.count), text.allSatisfy({ ("0"..."7").contains($0) }), let value = mode_t(text, radix: 8),
              value & 0o600 == 0o600, value & 0o111 == 0, value <= 0o777 else { return nil }
        file = value
    }

    /// Folders: the file mode plus search (x) wherever it grants read.
    public var directory: mode_t { file | (file & 0o444) >> 2 }

    /// The umask that yields `file` for files created 0666 and `directory` for folders created 0777.
    public var umask: mode_t { 0o777 & ~directory }

    /// Makes it the mode of everything this process creates from now on.
    public func apply() { _ = Glibc.umask(umask) }

    public var description: String { "0" + String(file, radix: 8) }
}
