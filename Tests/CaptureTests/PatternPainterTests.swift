import Capture
import Foundation
import Testing

/// The time the synthetic camera paints into its frames is what the page's live-latency check
/// reads back (Tests/VigilEndToEndTests/Browser): its layout is a contract, checked here.
struct PatternPainterTests {
    /// The glyphs as the browser check reads them: 3×5 cells, one 3-bit row each.
    static let glyphs: [[UInt8]: Character] = [
        [7, 5, 5, 5, 7]: "0", [2, 6, 2, 2, 7]: "1", [7, 1, 7, 4, 7]: "2", [7, 1, 7, 1, 7]: "3", [5, 5, 7, 1, 1]: "4",
        [7, 4, 7, 1, 7]: "5", [7, 4, 7, 5, 7]: "6", [7, 1, 1, 1, 1]: "7", [7, 5, 7, 5, 7]: "8", [7, 5, 7, 1, 7]: "9",
        [0, 2, 0, 2, 0]: ":", [0, 0, 0, 0, 2]: ".",
    ]

    /// Reads the painted time by sampling the luma at each cell's centre.
    static func paintedTime(width: Int, height: Int, wallNanos: Int64) -> String {
        var frame = [UInt8](repeating: 0, count: width * height * 2)
        frame.withUnsafeMutableBytes { PatternPainter(width: width, height: height).paint(into: $0.baseAddress!, sequence: 7, wallNanos: wallNanos) }
        let scale = max(1, height / 48), top = height * 3 / 4 + max(0, (height / 4 - 5 * scale) / 2)
        return String((0..<10).map { n -> Character in
            let rows = (0..<5).map { row -> UInt8 in
                (0..<3).reduce(0) { bits, col in
                    let x = n * 4 * scale + col * scale + scale / 2, y = top + row * scale + scale / 2
                    return bits << 1 | (frame[(y * width + x) * 2] > 165 ? 1 : 0)
                }
            }
            return glyphs[rows] ?? "?"
        })
    }

    @Test(arguments: [(320, 240), (160, 120), (640, 480)])
    func theTimeOfDayIsPaintedToATenthOfASecond(_ size: (Int, Int)) {
        // 13:45:07.89 UTC on 2026-11-30.
        let nanos: Int64 = (1_795_996_800 + 13 * 3600 + 45 * 60 + 7) * 1_000_000_000 + 890_000_000
        #expect(Self.paintedTime(width: size.0, height: size.1, wallNanos: nanos) == "13:45:07.8")
    }

    @Test func aTimeBefore1970IsPaintedWithoutTrapping() {
        // 0.1 s before the epoch: 23:59:59.9 of the day before.
        #expect(Self.paintedTime(width: 320, height: 240, wallNanos: -100_000_000) == "23:59:59.9")
    }
}
