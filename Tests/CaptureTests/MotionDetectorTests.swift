import Capture
import CaptureTesting
import Testing

/// A scripted scene in grey levels: a textured background with sensor noise, optional light
/// ramp and light switch, and bright squares that cross the picture between known times.
private struct Scene {
    struct Object {
        let enters: Double
        let leaves: Double
        /// Top-left corner's row and the band it crosses, in pixels.
        let y: Int
        let x0: Int
        let x1: Int
        let size = 48
    }

    let width = 320, height = 240
    var objects: [Object] = []
    var rampPerSecond = 0.0
    var lightSwitchAt: Double?
    var random = SeededRandom(seed: 17)

    mutating func paint(_ pixels: inout [UInt8], at t: Double) {
        var light = 60 + rampPerSecond * t
        if let at = lightSwitchAt, t >= at { light += 90 }
        for y in 0..<height {
            for x in 0..<width {
                let texture = Double((x / 16 + y / 16) % 2) * 30
                let noise = Double(Int(random.next() % 9) - 4)
                pixels[y * width + x] = UInt8(max(0, min(255, light + texture + noise)))
            }
        }
        for o in objects where t >= o.enters && t < o.leaves {
            let progress = (t - o.enters) / (o.leaves - o.enters)
            let left = o.x0 + Int(Double(o.x1 - o.x0) * progress)
            for y in o.y..<min(height, o.y + o.size) {
                for x in max(0, left)..<min(width, left + o.size) { pixels[y * width + x] = 230 }
            }
        }
    }

    /// Runs the scene for `seconds` at the detector's rate; returns the events' changes.
    mutating func run(seconds: Double, settings: MotionSettings) -> [MotionEventTracker.Change] {
        let detector = MotionDetector(width: width, height: height, settings: settings)
        var tracker = MotionEventTracker(settings: settings)
        var pixels = [UInt8](repeating: 0, count: width * height)
        var changes: [MotionEventTracker.Change] = []
        var t = 0.0
        while t < seconds {
            paint(&pixels, at: t)
            let sample = pixels.withUnsafeBufferPointer { detector.analyse(luma: $0.baseAddress!, stride: width, pixelStep: 1, seconds: t) }
            if let change = tracker.add(sample) { changes.append(change) }
            t += 1 / settings.framesPerSecond
        }
        if let change = tracker.finish() { changes.append(change) }
        return changes
    }
}

private func quickSettings() -> MotionSettings {
    var settings = MotionSettings()
    settings.gapSeconds = 1
    return settings
}

@Suite struct MotionDetectorTests {
    @Test func anObjectCrossingThePictureIsOneEventWithinHalfASecondOfTheScript() {
        var scene = Scene()
        scene.objects = [.init(enters: 2, leaves: 5, y: 90, x0: 20, x1: 250)]
        let changes = scene.run(seconds: 8, settings: quickSettings())
        #expect(changes.count == 2, "\(changes)")
        guard changes.count == 2, case .started(let start) = changes[0], case .ended(let from, let end, let peak) = changes[1] else { return }
        #expect(abs(start - 2) <= 0.5 && from == start, "started at \(start)")
        #expect(abs(end - 5) <= 0.5, "ended at \(end)")
        #expect(peak > 2 && peak < 10, "a 48×48 square is 3 % of 320×240: peak \(peak) %")
    }

    @Test func sensorNoiseAloneIsNotMotion() {
        var scene = Scene()
        #expect(scene.run(seconds: 20, settings: quickSettings()).isEmpty)
        var high = quickSettings()
        high.sensitivity = .high
        #expect(scene.run(seconds: 20, settings: high).isEmpty, "not even at high sensitivity")
    }

    @Test func aSlowLightRampIsNotMotion() {
        var scene = Scene()
        scene.rampPerSecond = 4  // 80 grey levels over 20 s: dawn
        #expect(scene.run(seconds: 20, settings: quickSettings()).isEmpty)
    }

    @Test func aLightSwitchIsNotMotionButAnObjectAfterItIs() {
        var scene = Scene()
        scene.lightSwitchAt = 3
        #expect(scene.run(seconds: 8, settings: quickSettings()).isEmpty)
        scene.objects = [.init(enters: 5, leaves: 8, y: 90, x0: 20, x1: 250)]
        let changes = scene.run(seconds: 11, settings: quickSettings())
        #expect(changes.count == 2, "\(changes)")
        if case .started(let start) = changes.first { #expect(abs(start - 5) <= 0.5, "started at \(start)") }
    }

    @Test func motionInsideAMaskIsIgnoredAndOutsideItIsNot() {
        var settings = quickSettings()
        // The top third of the picture: a road.
        settings.masks = [[.init(x: 0, y: 0), .init(x: 1, y: 0), .init(x: 1, y: 0.34), .init(x: 0, y: 0.34)]]
        var scene = Scene()
        scene.objects = [.init(enters: 2, leaves: 5, y: 10, x0: 20, x1: 250)]
        #expect(scene.run(seconds: 8, settings: settings).isEmpty, "the square crosses the masked band only")
        scene.objects = [.init(enters: 2, leaves: 5, y: 150, x0: 20, x1: 250)]
        #expect(scene.run(seconds: 8, settings: settings).count == 2)
    }

    @Test func aShortFlickerIsShorterThanMinSeconds() {
        var scene = Scene()
        scene.objects = [.init(enters: 2, leaves: 2.3, y: 90, x0: 100, x1: 110)]
        #expect(scene.run(seconds: 6, settings: quickSettings()).isEmpty)
    }

    @Test func eventsCloseTogetherAreOneAndAGapEndsIt() {
        var scene = Scene()
        scene.objects = [.init(enters: 1, leaves: 3, y: 90, x0: 20, x1: 250), .init(enters: 3.5, leaves: 5, y: 90, x0: 250, x1: 20),
                         .init(enters: 9, leaves: 11, y: 90, x0: 20, x1: 250)]
        let changes = scene.run(seconds: 14, settings: quickSettings())
        #expect(changes.count == 4, "two events (the first two crossings share one): \(changes)")
    }
}
