import Capture
import Foundation

/// One short status line per camera: frame rate, frames, drops and the file being written.
/// On a terminal the lines are redrawn in place every second; otherwise printed every 10 s.
final class StatusDisplay: @unchecked Sendable {
    struct Camera {
        let session: CaptureSession
        let movie: SegmentedMovieOutput?
        let timelapse: TimelapseOutput?
        var lastFrames = 0
        var lastTime = Clock.monotonicNanos()
    }

    private var cameras: [Camera]
    private let isTerminal = isatty(STDOUT_FILENO) != 0
    private var drawnLines = 0
    private var lastPrint: Int64 = 0
    private let root: String

    init(cameras: [Camera], root: String) {
        self.cameras = cameras
        self.root = root
    }

    /// Called about once a second.
    func tick() {
        let now = Clock.monotonicNanos()
        var lines: [String] = []
        for i in cameras.indices {
            let frames = cameras[i].session.capturedFrameCount
            let seconds = Double(now - cameras[i].lastTime) / 1e9
            let fps = seconds > 0 ? Double(frames - cameras[i].lastFrames) / seconds : 0
            cameras[i].lastFrames = frames
            cameras[i].lastTime = now
            lines.append(line(cameras[i], fps: fps, frames: frames))
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

    private func line(_ c: Camera, fps: Double, frames: Int) -> String {
        let drops = (c.movie?.droppedFrameCount ?? 0) + (c.timelapse?.droppedFrameCount ?? 0)
        var segment = c.movie?.currentSegmentPath ?? "-"
        if segment.hasPrefix(root + "/") { segment.removeFirst(root.count + 1) }
        let running = c.session.isRunning ? "" : "  STOPPED"
        return "\(c.session.cameraID)  \(String(format: "%5.1f", fps)) fps  frames \(frames)  drops \(drops)  segment \(segment)\(running)"
    }
}
