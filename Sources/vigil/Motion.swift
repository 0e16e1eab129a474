import ArgumentParser
import Capture
import Foundation
import Media

struct Motion: ParsableCommand {
    static let configuration = CommandConfiguration(
        abstract: "Motion detection tools.",
        subcommands: [MotionTest.self])
}

/// `vigil motion test FILE`: what the detector sees in a recording, second by second, so that
/// sensitivity and masks can be set by looking rather than guessing.
struct MotionTest: ParsableCommand {
    static let configuration = CommandConfiguration(
        commandName: "test",
        abstract: "Show what motion detection sees in a recorded file.",
        discussion: """
            Decodes FILE (a recording, e.g. from `vigil recordings`), analyses 5 pictures a \
            second as a camera's detector would, and prints per second the changed share of the \
            picture, the noise level the threshold follows, light switches and events. With \
            --picture it writes a JPEG of the changed cells at the peak of motion (white), the \
            masks (dark) and the rest (grey).
            Example: vigil motion test porch.mp4 --sensitivity high --mask "0,0 40%,0 40%,15% 0,15%"
            """)

    @Argument(help: "A recorded video file.")
    var file: String

    @Option(help: "low, medium or high.")
    var sensitivity: MotionSettings.Sensitivity = .medium

    @Option(help: "How much of the picture must change, in percent.")
    var minAreaPercent = 0.5

    @Option(help: "Motion shorter than this many seconds is noise.")
    var minSeconds = 0.5

    @Option(help: "Quiet for this many seconds ends an event.")
    var gapSeconds = 10.0

    @Option(help: ArgumentHelp("A region to ignore: corners \"x,y\" in pixels or percent, separated by spaces (repeatable).", valueName: "corners"))
    var mask: [String] = []

    @Option(help: ArgumentHelp("Write a JPEG of the changed cells and masks here.", valueName: "path"))
    var picture: String?

    func run() throws {
        let reader: MovieReader
        do { reader = try MovieReader(path: file) } catch {
            throw ValidationError("cannot read \(file): \(error)")
        }
        var settings = MotionSettings()
        settings.sensitivity = sensitivity
        settings.minAreaPercent = minAreaPercent
        settings.minSeconds = minSeconds
        settings.gapSeconds = gapSeconds
        for text in mask {
            guard let polygon = MotionSettings.mask(text, width: reader.width, height: reader.height) else {
                throw ValidationError("--mask \"\(text)\" is not a polygon: write at least three corners \"x,y\" (pixels or percent) separated by spaces")
            }
            settings.masks.append(polygon)
        }
        let detector = MotionDetector(width: reader.width, height: reader.height, settings: settings)
        var tracker = MotionEventTracker(settings: settings)
        var events: [(start: Double, end: Double, peak: Double)] = []
        var peak: (percent: Double, cells: [Bool])?
        var nextAnalysis = 0.0
        var second: (index: Int, maxPercent: Double, noise: Double, lights: Int)?
        print("second  changed  noise  ")
        func report(_ s: (index: Int, maxPercent: Double, noise: Double, lights: Int)) {
            let state = (s.lights > 0 ? " light switch" : "") + (tracker.isInEvent ? " MOTION" : "")
            print(String(format: "%6d  %6.2f %%  %5.1f ", s.index, s.maxPercent, s.noise) + state)
        }
        while let frame = try reader.nextFrame() {
            guard frame.seconds >= nextAnalysis else { continue }
            nextAnalysis = frame.seconds + 1 / settings.framesPerSecond
            let sample = frame.picture.withLuma { luma, stride in
                detector.analyse(luma: luma, stride: stride, pixelStep: 1, seconds: frame.seconds)
            }
            let index = Int(frame.seconds)
            if let s = second, s.index != index { report(s); second = nil }
            var s = second ?? (index, 0, 0, 0)
            s.maxPercent = max(s.maxPercent, sample.changedPercent)
            s.noise = sample.noise
            if sample.isLightSwitch { s.lights += 1 }
            second = s
            if sample.changedPercent > (peak?.percent ?? -1) {
                peak = (sample.changedPercent, (0..<detector.gridHeight).flatMap { y in (0..<detector.gridWidth).map { detector.isChanged(x: $0, y: y) } })
            }
            switch tracker.add(sample) {
            case .ended(let start, let end, let p): events.append((start, end, p))
            default: break
            }
        }
        if let s = second { report(s) }
        if case .ended(let start, let end, let p) = tracker.finish() { events.append((start, end, p)) }
        print(events.isEmpty ? "No motion event." : "\(events.count) event(s):")
        for e in events { print(String(format: "  %.1f s – %.1f s, peak %.1f %% of the picture", e.start, e.end, e.peak)) }
        if let path = picture, let cells = peak?.cells {
            try writePicture(cells, detector: detector, to: path)
            print("Changed cells at the peak (white) and masks (dark): \(path)")
        }
    }

    /// The detector's grid, 4 pixels a cell: white changed, dark masked, grey the rest.
    private func writePicture(_ changed: [Bool], detector: MotionDetector, to path: String) throws {
        let scale = 4
        let (w, h) = (detector.gridWidth * scale, detector.gridHeight * scale)
        let encoder = try JPEGEncoder(width: w, height: h, quality: 90)
        let picture = try encoder.makePicture()
        let (luma, stride) = picture.plane(0)
        for y in 0..<h {
            for x in 0..<w {
                let i = (y / scale) * detector.gridWidth + x / scale
                luma[y * stride + x] = detector.masked[i] ? 30 : changed[i] ? 255 : 110
            }
        }
        for plane in 1...2 {
            let (chroma, chromaStride) = picture.plane(plane)
            for y in 0..<(h / 2) { (chroma + y * chromaStride).update(repeating: 128, count: w / 2) }
        }
        try encoder.encode(picture) { bytes in try Data(bytes).write(to: URL(fileURLWithPath: path)) }
    }
}

extension MotionSettings.Sensitivity: ExpressibleByArgument {}
