/// Finds what changed in a camera's picture, cheaply: the luma plane is averaged down to a small
/// grid (about 160 cells wide), compared with a background that follows slow light changes, and
/// a cell counts as changed when it differs by more than the measured noise allows. Isolated
/// cells are dropped (despeckling), masked cells are never counted, and the whole picture
/// changing at once is a light switch, not motion. Buffers are made once: analysing a picture
/// allocates nothing.
public final class MotionDetector {
    /// What one picture showed.
    public struct Sample: Sendable, Equatable {
        public let seconds: Double
        /// Changed share of the unmasked picture, in percent.
        public let changedPercent: Double
        /// The noise level the threshold follows (mean grey-level difference of quiet cells).
        public let noise: Double
        public let isLightSwitch: Bool
    }

    public let settings: MotionSettings
    public let gridWidth: Int
    public let gridHeight: Int
    private let cell: Int
    private var background: [Float]
    private var current: [Float]
    private var changed: [Bool]
    /// Cells a mask covers: never counted, never compared.
    public let masked: [Bool]
    private let unmaskedCount: Int
    private var noise: Float = 2
    private var hasBackground = false

    public init(width: Int, height: Int, settings: MotionSettings, gridWidth target: Int = 160) {
        self.settings = settings
        cell = max(1, (width + target - 1) / target)
        gridWidth = max(1, width / cell)
        gridHeight = max(1, height / cell)
        let count = gridWidth * gridHeight
        background = Array(repeating: 0, count: count)
        current = Array(repeating: 0, count: count)
        changed = Array(repeating: false, count: count)
        masked = Self.rasterize(settings.masks, width: gridWidth, height: gridHeight)
        unmaskedCount = max(1, masked.lazy.filter { !$0 }.count)
    }

    /// Whether the cell at (x, y) changed in the last picture (for `vigil motion test`'s picture).
    public func isChanged(x: Int, y: Int) -> Bool { changed[y * gridWidth + x] }

    /// Analyses one picture. `luma` is its first pixel's grey level; `pixelStep` is 1 for planar
    /// formats (NV12, YUV 4:2:0) and 2 for YUYV, whose grey levels are every other byte.
    public func analyse(luma: UnsafePointer<UInt8>, stride: Int, pixelStep: Int, seconds: Double) -> Sample {
        average(luma, stride: stride, pixelStep: pixelStep)
        guard hasBackground else {
            background = current
            hasBackground = true
            return Sample(seconds: seconds, changedPercent: 0, noise: Double(noise), isLightSwitch: false)
        }
        // The picture's overall brightness change is light, not motion: compared without it.
        var shift: Float = 0
        for i in 0..<current.count where !masked[i] { shift += current[i] - background[i] }
        shift /= Float(unmaskedCount)
        let threshold = Float(max(settings.minimumDifference, settings.noiseFactor * Double(noise)))
        var raw = 0, quietSum: Float = 0, quietCount = 0
        for i in 0..<current.count {
            guard !masked[i] else { changed[i] = false; continue }
            let difference = abs(current[i] - background[i] - shift)
            changed[i] = difference > threshold
            if changed[i] { raw += 1 } else { quietSum += difference; quietCount += 1 }
        }
        if quietCount > 0 { noise = 0.9 * noise + 0.1 * max(0.5, quietSum / Float(quietCount)) }
        if Double(raw) / Double(unmaskedCount) > settings.lightSwitchShare {
            // The light changed: start again from this picture.
            background = current
            for i in 0..<changed.count { changed[i] = false }
            return Sample(seconds: seconds, changedPercent: 0, noise: Double(noise), isLightSwitch: true)
        }
        let kept = despeckle()
        updateBackground()
        return Sample(seconds: seconds, changedPercent: Double(kept) * 100 / Double(unmaskedCount), noise: Double(noise), isLightSwitch: false)
    }

    /// Each cell: the mean of a 4×4 sample of its pixels.
    private func average(_ luma: UnsafePointer<UInt8>, stride: Int, pixelStep: Int) {
        let step = max(1, cell / 4)
        let samples = Float(((cell + step - 1) / step) * ((cell + step - 1) / step))
        for gy in 0..<gridHeight {
            for gx in 0..<gridWidth {
                var sum = 0
                var y = gy * cell
                while y < (gy + 1) * cell {
                    let row = luma + y * stride
                    var x = gx * cell
                    while x < (gx + 1) * cell {
                        sum += Int(row[x * pixelStep])
                        x += step
                    }
                    y += step
                }
                current[gy * gridWidth + gx] = Float(sum) / samples
            }
        }
    }

    /// Keeps the changed cells with at least two changed neighbours (of four): sensor noise
    /// changes single cells, anything that moves changes patches. Returns how many are kept.
    private func despeckle() -> Int {
        var kept = 0
        let (w, h) = (gridWidth, gridHeight)
        for y in 0..<h {
            for x in 0..<w where changed[y * w + x] {
                var neighbours = 0
                if x > 0 && changed[y * w + x - 1] { neighbours += 1 }
                if x < w - 1 && changed[y * w + x + 1] { neighbours += 1 }
                if y > 0 && changed[(y - 1) * w + x] { neighbours += 1 }
                if y < h - 1 && changed[(y + 1) * w + x] { neighbours += 1 }
                if neighbours >= 2 { kept += 1 }
            }
        }
        return kept
    }

    /// The background follows the picture: quickly where nothing moves (slow light), slowly
    /// where something does (an object that stops becomes background after a while).
    private func updateBackground() {
        for i in 0..<background.count {
            let rate: Float = changed[i] ? 0.01 : 0.1
            background[i] += rate * (current[i] - background[i])
        }
    }

    /// Cells whose centre lies inside any polygon (even-odd rule).
    static func rasterize(_ polygons: [[MotionSettings.Point]], width: Int, height: Int) -> [Bool] {
        var masked = Array(repeating: false, count: width * height)
        for polygon in polygons where polygon.count >= 3 {
            for y in 0..<height {
                let py = (Double(y) + 0.5) / Double(height)
                for x in 0..<width {
                    let px = (Double(x) + 0.5) / Double(width)
                    var inside = false
                    var j = polygon.count - 1
                    for i in 0..<polygon.count {
                        let (a, b) = (polygon[i], polygon[j])
                        if (a.y > py) != (b.y > py), px < (b.x - a.x) * (py - a.y) / (b.y - a.y) + a.x { inside.toggle() }
                        j = i
                    }
                    if inside { masked[y * width + x] = true }
                }
            }
        }
        return masked
    }
}
