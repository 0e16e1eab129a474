import Foundation
import Glibc
import Plumbing

/// A progress line on standard error for long work: redrawn in place on a terminal, a plain
/// line every few seconds otherwise (logs, pipes).
public final class ProgressBar {
    private let label: String
    private let isTerminal = isatty(STDERR_FILENO) != 0
    private let started = Date()
    private var lastDraw = Date.distantPast

    public init(_ label: String) { self.label = label }

    public func update(_ progress: AssemblyProgress) {
        let now = Date()
        let finished = progress.done >= progress.total
        guard finished || now.timeIntervalSince(lastDraw) >= (isTerminal ? 0.1 : 5) else { return }
        lastDraw = now
        let fraction = progress.total > 0 ? Double(progress.done) / Double(progress.total) : 1
        let elapsed = now.timeIntervalSince(started)
        let eta = fraction > 0 && !finished ? String(format: ", %.0f s left", elapsed / fraction - elapsed) : ""
        let filled = Int(fraction * 30)
        let bar = String(repeating: "#", count: filled) + String(repeating: ".", count: 30 - filled)
        let line = String(format: "%@ [%@] %3.0f%% %d/%d%@", label, bar, fraction * 100, progress.done, progress.total, eta)
        Console.error((isTerminal ? "\r\u{1B}[K" + line + (finished ? "\n" : "") : line + "\n"))
    }
}
