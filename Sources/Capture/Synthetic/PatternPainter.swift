/// Paints synthetic test frames in YUYV (the synthetic camera and the emulated V4L2 device): the sequence block code (top half), a bar that moves
/// one step per frame, and the UTC time of day as large digits `HH:MM:SS.d` (bottom half; the
/// tenths let a test read how far behind a live view is).
public struct PatternPainter: Sendable {
    let width: Int
    let height: Int
    private var stride: Int { width * 2 }

    public init(width: Int, height: Int) {
        self.width = width
        self.height = height
    }

    public func paint(into base: UnsafeMutableRawPointer, sequence: UInt64, wallNanos: Int64) {
        let p = base.assumingMemoryBound(to: UInt8.self)
        // Background: the code half dark, the lower half mid grey.
        fill(p, x: 0, y: 0, w: width, h: height / 2, luma: SequencePattern.dark)
        fill(p, x: 0, y: height / 2, w: width, h: height - height / 2, luma: 96)
        let bits = SequencePattern.bits(for: sequence)
        for i in 0..<(SequencePattern.columns * SequencePattern.rows) where bits & (1 << (31 - UInt32(i))) != 0 {
            let b = SequencePattern.block(i, width: width, height: height)
            fill(p, x: b.x, y: b.y, w: b.width, h: b.height, luma: SequencePattern.bright)
        }
        // Moving element: a bar crossing the lower half, one step per frame.
        let barWidth = max(2, width / 16)
        let step = max(2, width / 64)
        let travel = max(1, width - barWidth)
        let barX = Int((sequence &* UInt64(step)) % UInt64(travel))
        fill(p, x: barX, y: height / 2, w: barWidth, h: height / 4, luma: 200)
        drawTime(p, wallNanos: wallNanos)
    }

    private func drawTime(_ p: UnsafeMutablePointer<UInt8>, wallNanos: Int64) {
        // Wrapped into 0..<864_000 for any time, before 1970 too (a negative index would trap).
        let tenthsOfDay = Int(((wallNanos / 100_000_000) % 864_000 + 864_000) % 864_000)
        let secondsOfDay = tenthsOfDay / 10
        let text = [secondsOfDay / 36000, (secondsOfDay / 3600) % 10, 10, (secondsOfDay / 600) % 6, (secondsOfDay / 60) % 10, 10,
                    (secondsOfDay % 60) / 10, secondsOfDay % 10, 11, tenthsOfDay % 10]
        let scale = max(1, height / 48)
        let glyphWidth = 4 * scale
        let top = height * 3 / 4 + max(0, (height / 4 - 5 * scale) / 2)
        guard text.count * glyphWidth <= width, top + 5 * scale <= height else { return }
        for (n, glyph) in text.enumerated() {
            let rows = Self.font[glyph]
            for row in 0..<5 {
                for col in 0..<3 where rows[row] & (4 >> col) != 0 {
                    fill(p, x: n * glyphWidth + col * scale, y: top + row * scale, w: scale, h: scale, luma: 235)
                }
            }
        }
    }

    /// 3×5 glyphs for 0–9, ':' (index 10) and '.' (11), one 3-bit row per entry.
    private static let font: [[UInt8]] = [
        [7, 5, 5, 5, 7], [2, 6, 2, 2, 7], [7, 1, 7, 4, 7], [7, 1, 7, 1, 7], [5, 5, 7, 1, 1],
        [7, 4, 7, 1, 7], [7, 4, 7, 5, 7], [7, 1, 1, 1, 1], [7, 5, 7, 5, 7], [7, 5, 7, 1, 7],
        [0, 2, 0, 2, 0], [0, 0, 0, 0, 2],
    ]

    /// Fills a rectangle with grey `luma` (neutral chroma). x and width are rounded to even.
    private func fill(_ p: UnsafeMutablePointer<UInt8>, x: Int, y: Int, w: Int, h: Int, luma: UInt8) {
        let x0 = max(0, x & ~1), x1 = min(width, (x + w + 1) & ~1)
        let y0 = max(0, y), y1 = min(height, y + h)
        guard x1 > x0, y1 > y0 else { return }
        let pair = UInt32(luma) | (128 << 8) | (UInt32(luma) << 16) | (128 << 24)
        for row in y0..<y1 {
            let start = UnsafeMutableRawPointer(p + row * stride + x0 * 2)
            let words = start.bindMemory(to: UInt32.self, capacity: (x1 - x0) / 2)
            for i in 0..<((x1 - x0) / 2) { words[i] = pair.littleEndian }
        }
    }
}
