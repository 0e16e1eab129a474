internal import CSQLite
import Foundation
import SystemPackage

/// Every failure of the recorder layer, with its cause kept as a value (SQLite's result code, an
/// `Errno`, the diagnostics of a file), so callers decide by the case, never by the text. Each
/// description says what happened and what to do.
public enum RecorderError: Error, Sendable, CustomStringConvertible {
    /// Every problem found in a configuration file, reported together with their lines.
    case configuration([ConfigurationDiagnostic])
    /// A schedule window's text that cannot be used, with what to write instead.
    case schedule(message: String, fix: String)
    /// A configuration that cannot be used: nothing was started.
    case refused(String)
    /// The SQLite index failed: `code` is SQLite's extended result code, `errno` the system's
    /// reason behind it when SQLite had one; `isNewer` when the file's schema is newer than this code.
    case index(code: Int32, errno: Errno?, message: String, isNewer: Bool)
    /// The storage root cannot hold recordings.
    case storageUnwritable(path: String, reason: String)
    /// No camera matches the name a user gave.
    case cameraNotFound(name: String, available: [String])
    /// An export that cannot be made from the recordings asked for.
    case export(String)
    /// A hook definition that cannot be used.
    case hook(String)

    /// The disk is full: SQLite's `SQLITE_FULL`, or ENOSPC/EDQUOT behind an index write.
    public var isDiskFull: Bool {
        guard case .index(let code, let errno, _, _) = self else { return false }
        return code & 0xff == SQLITE_FULL || errno?.isDiskFull == true
    }

    /// The index file is not a usable database: it must be moved aside and rebuilt.
    public var isDamagedIndex: Bool {
        guard case .index(let code, _, _, _) = self else { return false }
        return code & 0xff == SQLITE_CORRUPT || code & 0xff == SQLITE_NOTADB
    }

    /// The diagnostics of a configuration that was refused (empty for other errors).
    public var diagnostics: [ConfigurationDiagnostic] {
        if case .configuration(let d) = self { return d }
        return []
    }

    public var description: String {
        switch self {
        case .configuration(let diagnostics):
            return diagnostics.map(\.description).joined(separator: "\n")
        case .schedule(let message, let fix):
            return "\(message); \(fix)"
        case .refused(let description), .export(let description), .hook(let description):
            return description
        case .index(_, _, let message, let isNewer):
            // With what to do about it, for commands that only read the index.
            return isDamagedIndex ? "\(message): the index is damaged; `vigil run` moves it aside and rebuilds it from the recordings"
                : isNewer ? "\(message): use that Vigil, or move the file aside and `vigil run` rebuilds it from the recordings"
                : message
        case .storageUnwritable(let path, let reason):
            return "cannot write recordings to \(path): \(reason). Choose another directory with --output, or fix its permissions"
        case .cameraNotFound(let name, let available):
            return "no camera matches \"\(name)\"" + (available.isEmpty ? "; no cameras are connected" : "; connected: \(available.joined(separator: ", "))")
                + ". Run `vigil devices` to list cameras"
        }
    }

    /// The index's own words, without advice (for logs that add their own).
    var indexMessage: String? {
        if case .index(_, _, let message, _) = self { return message }
        return nil
    }
}
