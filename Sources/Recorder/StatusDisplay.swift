import Capture
import Foundation
import Synchronization

/// One short status line per camera: frame rate, frames, drops and the file being written (or
/// why it is not recording). On a terminal the lines are redrawn in place every second;
/// otherwise printed every 10 s.
final class StatusDisplay: Sendable {
    struct Outputs {
        let movie: SegmentedMovieOutput?
        let timelapse: TimelapseOutput?
    }

    private let outputs: [String: Outputs]
    private let isTerminal = isatty(STDOUT_FILENO) != 0
    /// Frames and time of each camera's last line, lines drawn, and when they were last printed.
    private let drawn = Mutex<(last: [String: (frames: Int, time: Int64)], lines: Int, printed: Int64)>(([:], 0, 0))
    private let root: String

    init(outputs: [String: Outputs], root: String) {
        self.outputs = outputs
        self.root = root
    }

    /// Called about once a second.
    func tick(_ statuses: [Supervisor.Status]) {
        let now = SystemClocks.monotonicNanos()
        drawn.withLock { drawn in
            var lines: [String] = []
            for s in statuses {
                let previous = drawn.last[s.cameraID] ?? (s.frames, now)
                let seconds = Double(now - previous.time) / 1e9
                let fps = seconds > 0 ? Double(s.frames - previous.frames) / seconds : 0
                drawn.last[s.cameraID] = (s.frames, now)
                lines.append(line(s, fps: fps))
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

    private func line(_ s: Supervisor.Status, fps: Double) -> String {
        let o = outputs[s.cameraID]
        let drops = (o?.movie?.droppedFrameCount ?? 0) + (o?.timelapse?.droppedFrameCount ?? 0)
        let segment = StorageLayout(root: root).relative(o?.movie?.currentSegmentPath ?? "-")
        let state = s.isRecording ? "segment \(segment)" : s.lastProblem.map { "WAITING: \($0)" } ?? "starting"
        // Writes that failed (a disk full, a file the muxer refused) are said until the run ends.
        let failed = o?.movie?.failedWriteCount ?? 0
        return "\(s.cameraID)  \(String(format: "%5.1f", fps)) fps  frames \(s.frames)  drops \(drops)  "
            + (failed > 0 ? "WRITE FAILURES \(failed)  " : "") + state
    }
}
