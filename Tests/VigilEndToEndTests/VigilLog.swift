import CaptureTesting
import Foundation
import Glibc
import Testing

/// Vigil's log (`TIME level label: message` lines), each line stamped with when the test saw it:
/// Vigil's own stamps are whole seconds, and a camera's sessions follow each other within one.
struct VigilLog {
    struct Line {
        let index: Int
        /// Unix seconds.
        let second: Double
        /// The message, network addresses taken out (their paths must not match a pattern).
        let message: String
        let raw: String
        /// The hostile cameras it names (`/hostile/SEED`, each once: a redirect names its own
        /// camera twice, a configuration dump all of them).
        let cameras: Set<String>
    }

    /// In the order they were seen, so by `second`.
    let all: [Line]

    init(_ lines: [(second: Double, text: String)]) {
        all = lines.enumerated().map { index, line in
            let message = line.text.split(separator: ": ", maxSplits: 1).dropFirst().first.map(String.init) ?? ""
            let cameras = line.text.contains("/hostile/") ? Set(line.text.matches(of: /\/hostile\/[0-9]+/).map { String(line.text[$0.range]) }) : []
            return Line(index: index, second: line.second, message: withoutAddresses(message), raw: line.text, cameras: cameras)
        }
    }

    /// Reads a log file as it grows, stamping each whole line with the moment it was first read.
    final class Reader {
        private let handle: FileHandle?
        private var rest = Data()
        private(set) var lines: [(second: Double, text: String)] = []

        init(path: String) { handle = FileHandle(forReadingAtPath: path) }

        func read() {
            guard let handle, let data = try? handle.readToEnd(), !data.isEmpty else { return }
            let now = Date().timeIntervalSince1970
            rest.append(data)
            guard let last = rest.lastIndex(of: 0x0A) else { return }
            for line in rest[..<last].split(separator: 0x0A, omittingEmptySubsequences: false) {
                lines.append((now, String(decoding: line, as: UTF8.self)))
            }
            rest = Data(rest[(last + 1)...])
        }
    }

    /// The lines about camera `name` alone (at `path` on its server) seen from `from` to `to`
    /// (Unix seconds). A line about several cameras (a configuration dump) is about none.
    func lines(about name: String, address path: String, from: Double, to: Double) -> [Line] {
        var low = 0, high = all.count
        while low < high {
            let middle = (low + high) / 2
            if all[middle].second < from { low = middle + 1 } else { high = middle }
        }
        return all[low...].prefix { $0.second <= to }.filter { line in
            line.cameras.count <= 1 && (line.cameras.contains(path) || line.raw.contains("camera \(name) ") || line.raw.contains(" \(name): "))
        }
    }

    /// The sessions no line names, each with what the log said of its camera meanwhile. A line
    /// names a session when it carries the session's camera's address (`camera` gives the
    /// camera's name in the log, nil: not one of ours), was seen while the session lasted or up to 2.5 s after (Vigil
    /// may notice the end a little later), and matches the session's pattern; a line names one
    /// session at most, the earliest that it can.
    func unnamed(_ sessions: [HostileSession], camera: (HostileSession) -> String?) -> [(session: HostileSession, said: [Line])] {
        var used = Set<Int>()
        var unnamed: [(session: HostileSession, said: [Line])] = []
        let ordered = sessions.sorted { $0.start < $1.start }
        for (k, session) in ordered.enumerated() {
            guard let name = camera(session) else { continue }
            // Not into the camera's next session: its lines are its own.
            let next = ordered[(k + 1)...].first { $0.path == session.path }.map { $0.start + 0.3 } ?? .infinity
            let about = lines(about: name, address: session.path, from: session.start - 0.1, to: min(session.end + 2.5, next))
            // Only the client's own lines (they carry the camera's address) name what it met: a
            // line naming the camera alone is the recorder's ("write header of …" is no header).
            if let line = about.first(where: { !used.contains($0.index) && $0.cameras.contains(session.path) && session.isNamed(in: $0.message) }) {
                used.insert(line.index)
            } else {
                unnamed.append((session, about.filter { $0.second <= session.end + 1 }))
            }
        }
        return unnamed
    }
}

/// `text` without its network addresses (`rtsp://…` up to the next space).
func withoutAddresses(_ text: String) -> String {
    text.replacingOccurrences(of: #"[a-z]+://[^ ]*"#, with: "<address>", options: .regularExpression)
}
