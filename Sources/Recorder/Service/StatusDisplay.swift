import Capture
import Foundation
import Plumbing
import Synchronization

/// One short status line per camera: frame rate, frames, drops and the file being written (or
/// why it is not recording). On a terminal the lines are redrawn in place every second;
/// otherwise printed every 10 s.
final class StatusDisplay: Sendable {
    private let isTerminal = isatty(STDOUT_FILENO) != 0
    /// Frames and time of each camera's last line, lines drawn, and when they were last printed.
    private let drawn = Mutex<(last: [String: (frames: Int, time: Int64)], lines: Int, printed: Int64)>(([:], 0, 0))
    private let root: String

    init(root: String) {
        self.root = root
    }

    /// Called about once a second, with each camera's outputs as they are now (a reload
    /// replaces them) and their counts since the start.
    func tick(_ statuses: [Supervisor.Status], outputs: [String: OutputTally]) {
        let now = SystemClocks.monotonicNanos()
        drawn.withLock { drawn in
            var lines: [String] = []
            for s in statuses {
                let previous = drawn.last[s.cameraID] ?? (s.frames, now)
                let seconds = Double(now - previous.time) / 1e9
                let fps = seconds > 0 ? Double(s.frames - previous.frames) / seconds : 0
                drawn.last[s.cameraID] = (s.frames, now)
                lines.append(line(s, outputs[s.cameraID], fps: fps))
            }
            if isTerminal {
                var out = drawn.lines > 0 ? "\u{1B}[\(drawn.lines)A" : ""
                for l in lines { out += "\u{1B}[2K" + l + "\n" }
                Console.write(out)
                drawn.lines = lines.count
            } else if now - drawn.printed >= 10_000_000_000 {
                drawn.printed = now
                Console.line(lines.joined(separator: "\n"))
            }
        }
    }

    private func line(_ s: Supervisor.Status, _ o: OutputTally?, fps: Double) -> String {
        let segment = StorageLayout(root: root).relative(o?.segmentPath ?? "-")
        let state = s.isRecording ? "segment \(segment)" : s.lastProblem.map { "WAITING: \($0)" } ?? "starting"
        // Writes that failed (a disk full, a file the muxer refused) are said until the run ends.
        let failed = o?.failedWrites ?? 0
        return "\(s.cameraID)  \(String(format: "%5.1f", fps)) fps  frames \(s.frames)  drops \(o?.dropped ?? 0)  "
            + (failed > 0 ? "WRITE FAILURES \(failed)  " : "") + state
    }
}
