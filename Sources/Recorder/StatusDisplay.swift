import Capture
import Foundation

/// One short status line per camera: frame rate, frames, drops and the file being written (or
/// why it is not recording). On a terminal the lines are redrawn in place every second;
/// otherwise printed every 10 s.
final class StatusDisplay: @unchecked Sendable {
    struct Outputs {
        let movie: SegmentedMovieOutput?
        let timelapse: TimelapseOutput?
    }

    private let outputs: [String: Outputs]
    private var last: [String: (frames: Int, time: Int64)] = [:]
    private let isTerminal = isatty(STDOUT_FILENO) != 0
    private var drawnLines = 0
    private var lastPrint: Int64 = 0
    private let root: String

    init(outputs: [String: Outputs], root: String) {
        self.outputs = outputs
        self.root = root
    }

    /// Called about once a second.
    func tick(_ statuses: [Supervisor.Status]) {
        let now = SystemClocks.monotonicNanos()
        var lines: [String] = []
        for s in statuses {
            let previous = last[s.cameraID] ?? (s.frames, now)
            let seconds = Double(now - previous.time) / 1e9
            let fps = seconds > 0 ? Double(s.frames - previous.frames) / seconds : 0
            last[s.cameraID] = (s.frames, now)
            lines.append(line(s, fps: fps))
        }
        if isTerminal {
            var out = drawnLines > 0 ? "\u{1B}[\(drawnLines)A" : ""
            for l in lines { out += "\u{1B}[2K" + l + "\n" }
            Console.write(out)
            drawnLines = lines.count
        } else if now - lastPrint >= 10_000_000_000 {
            lastPrint = now
            Console.line(lines.joined(separator: "\n"))
        }
    }

    private func line(_ s: Supervisor.Status, fps: Double) -> String {
        let o = outputs[s.cameraID]
        let drops = (o?.movie?.droppedFrameCount ?? 0) + (o?.timelapse?.droppedFrameCount ?? 0)
        var segment = o?.movie?.currentSegmentPath ?? "-"
        if segment.hasPrefix(root + "/") { segment.removeFirst(root.count + 1) }
        let state = s.isRecording ? "segment \(segment)" : s.lastProblem.map { "WAITING: \($0)" } ?? "starting"
        return "\(s.cameraID)  \(String(format: "%5.1f", fps)) fps  frames \(s.frames)  drops \(drops)  \(state)"
    }
}
