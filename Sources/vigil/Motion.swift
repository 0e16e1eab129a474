import ArgumentParser
import Capture
import Foundation
import Media
import Plumbing
import Recorder
import Synchronization

struct Motion: ParsableCommand {
    static let configuration = CommandConfiguration(
        abstract: "Motion detection tools.",
        subcommands: [MotionTest.self])
}

/// `vigil motion test FILE` or `--camera NAME`: what the detector sees, second by second, so
/// that sensitivity and masks can be set by looking rather than guessing.
struct MotionTest: AsyncParsableCommand {
    static let configuration = CommandConfiguration(
        commandName: "test",
        abstract: "Show what motion detection sees in a recorded file or a configured camera.",
        discussion: """
            Decodes FILE (a recording, e.g. from `vigil recordings`), or watches the camera NAME of the \
            configuration for --seconds (opened as `vigil run` opens it, without recording; stop `vigil \
            run` first if it holds a USB camera), analyses 5 pictures a second as the camera's detector \
            does, and prints per second the changed share of the picture, the noise level the threshold \
            follows, light switches and events.

            With --camera, the camera's [[motion]] table gives the settings and masks that the options \
            below do not. With --picture it writes a JPEG of the changed cells at the peak of motion \
            (white), the masks (dark) and the rest (grey).

            Examples:
              vigil motion test porch.mp4 --sensitivity high \\
                --mask "0,0 40%,0 40%,15% 0,15%"
              vigil motion test --camera porch --seconds 30 \\
                --config /etc/vigil/vigil.toml --picture seen.jpg
            """)

    @Argument(help: "A recorded video file (or use --camera).")
    var file: String?

    @Option(help: ArgumentHelp("Watch this camera of the configuration instead of a file.", valueName: "name"))
    var camera: String?

    @Option(name: .shortAndLong, help: ArgumentHelp("The configuration that names the camera (default: /etc/vigil/vigil.toml).", valueName: "file"))
    var config = "/etc/vigil/vigil.toml"

    @Option(help: "With --camera: how long to watch.")
    var seconds = 30.0

    @Option(help: "low, medium or high (default: the camera's [[motion]], else medium).")
    var sensitivity: MotionSettings.Sensitivity?

    @Option(help: "How much of the picture must change, in percent (default 0.5).")
    var minAreaPercent: Double?

    @Option(help: "Motion shorter than this many seconds is noise (default 0.5).")
    var minSeconds: Double?

    @Option(help: "Quiet for this many seconds ends an event (default 10).")
    var gapSeconds: Double?

    @Option(help: ArgumentHelp("A region to ignore: corners \"x,y\" in pixels or percent, separated by spaces (repeatable; replaces the camera's masks).", valueName: "corners"))
    var mask: [String] = []

    @Option(help: ArgumentHelp("Write a JPEG of the changed cells and masks here.", valueName: "path"))
    var picture: String?

    func validate() throws {
        if (file == nil) == (camera == nil) { throw ValidationError("give a recorded FILE or --camera NAME") }
        try checkOption("--seconds", seconds, in: 1...3600, " seconds")
    }

    /// The options given, over `base` (the camera's [[motion]] settings, or the defaults).
    private func settings(over base: MotionSettings) -> MotionSettings {
        var settings = base
        if let sensitivity { settings.sensitivity = sensitivity }
        if let minAreaPercent { settings.minAreaPercent = minAreaPercent }
        if let minSeconds { settings.minSeconds = minSeconds }
        if let gapSeconds { settings.gapSeconds = gapSeconds }
        return settings
    }

    func run() async throws {
        if let camera { return try await watch(camera) }
        let file = file!
        let reader: MovieReader
        do { reader = try MovieReader(path: file) } catch {
            throw ValidationError("cannot read \(file): \(error)")
        }
        var settings = settings(over: MotionSettings())
        for text in mask {
            guard let polygon = MotionSettings.mask(text, width: reader.width, height: reader.height) else {
                throw ValidationError("--mask \"\(text)\" is not a polygon: write at least three corners \"x,y\" (pixels or percent) separated by spaces")
            }
            settings.masks.append(polygon)
        }
        let detector = MotionDetector(width: reader.width, height: reader.height, settings: settings)
        var tracker = MotionEventTracker(settings: settings)
        let report = MotionReport(origin: 0)
        var nextAnalysis = 0.0
        while let frame = try reader.nextFrame() {
            guard frame.seconds >= nextAnalysis else { continue }
            nextAnalysis = frame.seconds + 1 / settings.framesPerSecond
            let sample = frame.picture.withLuma { luma, stride in
                detector.analyse(luma: luma, stride: stride, pixelStep: 1, seconds: frame.seconds)
            }
            let change = tracker.add(sample)
            report.add(sample, change, detector)
        }
        report.finish(tracker.finish())
        try report.writePicture(to: picture)
    }

    /// Watches a configured camera for `seconds`.
    private func watch(_ name: String) async throws {
        let configuration: Configuration
        do { configuration = try ConfigurationLoader.load(path: config) } catch {
            Console.error("\(error)\n")
            throw ExitCode.failure
        }
        let test: LiveMotionTest
        do { test = try LiveMotionTest(configuration: configuration, camera: name) } catch {
            Console.error("vigil: \(error)\n")
            throw ExitCode.failure
        }
        let job = test.camera.motion
        let settings = settings(over: job?.settings ?? MotionSettings())
        let masks = mask.isEmpty ? job?.masks ?? [] : mask
        let pictures = FileManager.default.temporaryDirectory.appendingPathComponent("vigil-motion-test-\(getpid())").path
        defer { try? FileManager.default.removeItem(atPath: pictures) }
        Console.line("Watching camera \(name) for \(DeviceFormat.rate(seconds)) s" + (job == nil ? " (it has no [[motion]] table: default settings)" : " with its [[motion]] settings") + "…")
        let report = MotionReport(origin: Date().timeIntervalSince1970)
        do {
            try await test.run(seconds: seconds, settings: settings, masks: masks, pictureDirectory: pictures) { sample, change, detector in
                report.add(sample, change, detector)
            }
        } catch {
            Console.error("vigil: \(error)\n")
            throw ExitCode.failure
        }
        report.finish(nil)
        try report.writePicture(to: picture)
    }
}

/// What `vigil motion test` prints: a line per second (the largest changed share, the noise,
/// light switches, MOTION while an event is under way), then the events; and the picture of
/// the detector's grid at the peak. Times are seconds from `origin`.
final class MotionReport: Sendable {
    private struct State {
        var second: (index: Int, maxPercent: Double, noise: Double, lights: Int)?
        var events: [(start: Double, end: Double, peak: Double)] = []
        var peak: Peak?
        /// An event has started and not ended.
        var inEvent = false

        mutating func end(_ change: MotionEventTracker.Change?, origin: Double) {
            if case .ended(let start, let end, let p)? = change {
                events.append((start - origin, end - origin, p))
                inEvent = false
            }
        }
    }

    /// The detector's grid at the largest changed share.
    private struct Peak {
        let percent: Double
        let cells: [Bool]
        let masked: [Bool]
        let width: Int
        let height: Int
    }

    private let origin: Double
    /// `add` runs on the detection thread during a live test, `finish` after it on the caller's.
    private let state = Mutex(State())

    init(origin: Double) {
        self.origin = origin
        Console.line("second  changed  noise  ")
    }

    func add(_ sample: MotionDetector.Sample, _ change: MotionEventTracker.Change?, _ detector: MotionDetector) {
        let index = Int(sample.seconds - origin)
        let cells = { (0..<detector.gridHeight).flatMap { y in (0..<detector.gridWidth).map { detector.isChanged(x: $0, y: y) } } }
        let (masked, width, height) = (detector.masked, detector.gridWidth, detector.gridHeight)
        state.withLock { state in
            if let s = state.second, s.index != index { Self.line(s, inEvent: state.inEvent) ; state.second = nil }
            if case .started? = change { state.inEvent = true }
            var s = state.second ?? (index, 0, 0, 0)
            s.maxPercent = max(s.maxPercent, sample.changedPercent)
            s.noise = sample.noise
            if sample.isLightSwitch { s.lights += 1 }
            state.second = s
            if sample.changedPercent > (state.peak?.percent ?? -1) {
                state.peak = Peak(percent: sample.changedPercent, cells: cells(), masked: masked, width: width, height: height)
            }
            state.end(change, origin: origin)
        }
    }

    private static func line(_ s: (index: Int, maxPercent: Double, noise: Double, lights: Int), inEvent: Bool) {
        let state = (s.lights > 0 ? " light switch" : "") + (inEvent ? " MOTION" : "")
        Console.line(String(format: "%6d  %6.2f %%  %5.1f ", s.index, s.maxPercent, s.noise) + state)
    }

    /// The last second and the events; `last` is the tracker's final change (a file's end).
    func finish(_ last: MotionEventTracker.Change?) {
        state.withLock { state in
            if let s = state.second { Self.line(s, inEvent: state.inEvent) }
            state.end(last, origin: origin)
            let stillUnderWay = state.inEvent
            let events = state.events
            Console.line(events.isEmpty && !stillUnderWay ? "No motion event." : "\(events.count + (stillUnderWay ? 1 : 0)) event(s):")
            for e in events { Console.line(String(format: "  %.1f s – %.1f s, peak %.1f %% of the picture", e.start, e.end, e.peak)) }
            if stillUnderWay { Console.line("  one still under way when the test ended") }
        }
    }

    /// The detector's grid, 4 pixels a cell: white changed, dark masked, grey the rest.
    func writePicture(to path: String?) throws {
        guard let path, let peak = state.withLock({ $0.peak }) else { return }
        let scale = 4
        let (w, h) = (peak.width * scale, peak.height * scale)
        let encoder = try JPEGEncoder(width: w, height: h, quality: 90)
        let picture = try encoder.makePicture()
        let (luma, stride) = picture.plane(0)
        for y in 0..<h {
            for x in 0..<w {
                let i = (y / scale) * peak.width + x / scale
                luma[y * stride + x] = peak.masked[i] ? 30 : peak.cells[i] ? 255 : 110
            }
        }
        for plane in 1...2 {
            let (chroma, chromaStride) = picture.plane(plane)
            for y in 0..<(h / 2) { (chroma + y * chromaStride).update(repeating: 128, count: w / 2) }
        }
        try encoder.encode(picture) { bytes in try Data(bytes).write(to: URL(fileURLWithPath: path)) }
        Console.line("Changed cells at the peak (white) and masks (dark): \(path)")
    }
}

extension MotionSettings.Sensitivity: ExpressibleByArgument {}
