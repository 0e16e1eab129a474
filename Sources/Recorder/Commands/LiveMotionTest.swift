import Capture
import Foundation
import Media
import Plumbing

/// `vigil motion test --camera NAME`: a configured camera's motion detection for a while,
/// without recording: the camera is opened as `vigil run` would open it (its format, rate,
/// rotation and `[[motion]]` table), and every analysed picture is handed to the caller.
public struct LiveMotionTest: Sendable {
    public let camera: CameraConfig
    private let configuration: Configuration

    /// The camera named `name` in `configuration`, or an error that lists the names there are.
    public init(configuration: Configuration, camera name: String) throws {
        guard let camera = configuration.cameras.first(where: { $0.name == name }) else {
            let names = configuration.cameras.map(\.name)
            throw RecorderError.refused("no camera named \(name) in \(configuration.sourcePath ?? "the configuration")\(Suggestion.phrase(for: name, among: names))"
                + (names.isEmpty ? "" : "; cameras: \(names.joined(separator: ", "))"))
        }
        self.camera = camera
        self.configuration = configuration
    }

    /// Runs detection with `settings` and `masks` for `seconds`; `observer` sees each analysed
    /// picture on the detection thread. Event pictures go to `pictureDirectory`. The camera is
    /// opened and closed on a thread of its own; meanwhile this task sleeps.
    public func run(
        seconds: Double, settings: MotionSettings, masks: [String], pictureDirectory: String,
        observer: @escaping @Sendable (MotionDetector.Sample, MotionEventTracker.Change?, MotionDetector) -> Void
    ) async throws {
        let session = try await BlockingIO("vigil.motion-test").run { [self] in
            try start(settings: settings, masks: masks, pictureDirectory: pictureDirectory, observer: observer)
        }
        do {
            try await Task.sleep(for: .seconds(seconds))
        } catch {
            await session.stop()
            throw error
        }
        await session.stop()
    }

    private func start(
        settings: MotionSettings, masks: [String], pictureDirectory: String,
        observer: @escaping @Sendable (MotionDetector.Sample, MotionEventTracker.Change?, MotionDetector) -> Void
    ) throws -> CaptureSession {
        let sources: [any DeviceSource] = [
            V4L2DeviceSource(), SyntheticDeviceSource(count: RecorderService.syntheticCount(configuration)),
            NetworkDeviceSource(cameras: RecorderService.networkCameras(configuration)),
        ]
        // A camera with a detection stream (`detect_url`) is watched there, as `vigil run` does.
        let match = camera.detectURL.map { CameraMatch.url($0) } ?? camera.match
        guard let device = MergedDeviceSource(sources).devices().first(where: CameraJobs.matcher(match)) else {
            throw RecorderError.refused("camera \(camera.name) (\(camera.match.text)) is not present: plug it in, or check `vigil devices`")
        }
        var outputSettings = MotionOutput.Settings(motion: settings, masks: masks, storageRoot: pictureDirectory, observer: observer)
        outputSettings.camera = camera.name
        let output = MotionOutput(outputSettings)
        let session = CaptureSession()
        session.beginConfiguration()
        try session.addInput(device.id == camera.name ? device : device.renamed(camera.name))
        try session.setFormat(camera.format)
        try session.setFrameRate(camera.frameRate)
        for (key, value) in camera.controls { try session.setControl(key, to: value) }
        try session.addOutput(output, settings: ConnectionSettings(rotation: camera.rotation, isMirrored: camera.mirrored))
        do {
            try session.commitConfiguration()
            try session.startRunning()
        } catch {
            guard error.errno == .resourceBusy else { throw error }
            throw RecorderError.refused("camera \(camera.name) is in use (\(error)): stop `vigil run` (systemctl stop vigil) for the test, or test a recording with `vigil motion test FILE`")
        }
        return session
    }
}
