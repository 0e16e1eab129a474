import ArgumentParser
import Capture
import Foundation
import Media
import Recorder

struct Demo: AsyncParsableCommand {
    static let configuration = CommandConfiguration(
        abstract: "Record synthetic test cameras into segments and timelapse stills.",
        discussion: """
            Each synthetic camera paints its frame number as large blocks, a moving bar and the time, at \
            a real-time pace. Files go to DIR/CAMERA/video/DAY/ (segments) and DIR/CAMERA/stills/DAY/ \
            (JPEG stills), named in UTC. A file being written ends in .partial and is renamed when \
            finished. Ctrl-C or SIGTERM finalizes open files and exits 0.

            The web page and its API are served at http://127.0.0.1:8080 (said at start; a port in use \
            is said and recording goes on).
            """
    )

    @Option(name: .shortAndLong, help: "Directory to record into.")
    var output: String = "vigil-demo"

    @Option(help: "Stop after this many seconds (default: run until Ctrl-C).")
    var duration: Double?

    @Option(help: "Number of synthetic cameras.")
    var cameras: Int = 1

    @Option(name: .customLong("device"), help: ArgumentHelp(
        "Record this USB camera instead of synthetic ones: its id, node (/dev/video0) or name, as `vigil devices` lists them. Repeat for several.",
        valueName: "camera"))
    var devices: [String] = []

    @Option(help: "Frame size, WIDTHxHEIGHT (160x120 … 1920x1080).")
    var size: FrameSize = FrameSize(argument: "640x480")!

    @Option(help: "Frames per second (1–60).")
    var fps: Double = 15

    @Option(help: "Camera pixel format: yuyv422 or mjpeg (default: yuyv422 for synthetic cameras, the camera's best at that size for USB cameras, MJPEG first).")
    var pixelFormat: PixelFormat?

    @Option(help: "Segment length in seconds; segments start at multiples of it in wall-clock time.")
    var segmentSeconds: Int = 60

    @Option(help: "Seconds between timelapse stills, aligned to the wall clock.")
    var timelapseInterval: Int = 60

    @Flag(help: "Record MJPEG frames as they are (MKV, no encoding). Needs --pixel-format mjpeg.")
    var streamCopy = false

    @Option(help: "x264 preset (ultrafast … veryslow).")
    var preset: String = "veryfast"

    @Option(help: "x264 constant quality, 0–51 (lower is better).")
    var crf: Int = 23

    @Flag(help: "Unplug and wedge the synthetic cameras now and then, to watch them come back.")
    var chaos = false

    @Flag(help: "Film a square that crosses the picture from 2 s to 5 s of every 10 s, with motion detection on (see `vigil events`).")
    var motion = false

    @Option(help: "Restart a camera that delivers no frame for this many seconds.")
    var watchdogSeconds: Double = 10

    @Option(name: .customLong("hook"), help: ArgumentHelp(
        "Run a shell command on an event, e.g. camera_lost='notify-send \"$VIGIL_CAMERA lost\"'. Events: \(RecorderEvent.names.joined(separator: ", ")). The command sees VIGIL_EVENT, VIGIL_CAMERA, VIGIL_FILE, VIGIL_REASON. Repeatable.",
        valueName: "event=command"))
    var hooks: [String] = []

    @Option(help: "Seconds a hook may run before it is killed.")
    var hookTimeout: Double = 30

    @Option(help: ArgumentHelp("Where the web page is served: a loopback HOST:PORT, or \"\" for none.", valueName: "address"))
    var listen = HTTPSettings.defaultListen

    @OptionGroup var global: GlobalOptions

    func validate() throws {
        // The same limits as the configuration's keys.
        try checkOption("--cameras", cameras, in: 1...64)
        if let duration { try checkOption("--duration", duration, in: 0.001...longestDuration, " seconds") }
        try checkOption("--segment-seconds", segmentSeconds, in: 1...86_400)
        try checkOption("--timelapse-interval", timelapseInterval, in: 1...86_400)
        try checkOption("--crf", crf, in: 0...51)
        try checkOption("--watchdog-seconds", watchdogSeconds, in: 1...3600)
        try checkOption("--hook-timeout", hookTimeout, in: 0.001...86_400, " seconds")
        do { _ = try EventHooks(definitions: hooks) } catch { throw ValidationError("\(error)") }
        if let problem = HTTPSettings.problemWithoutToken(listen: listen) { throw ValidationError("--listen: \(problem)") }
        if chaos && !devices.isEmpty { throw ValidationError("--chaos works on synthetic cameras only: drop --device") }
        if motion && chaos { throw ValidationError("--motion and --chaos cannot be combined: chaos unplugs the plain synthetic cameras, --motion films with others") }
        if motion && !devices.isEmpty { throw ValidationError("--motion films a scripted scene with synthetic cameras: drop --device (for a USB camera, add a [[motion]] table to a configuration)") }
        if streamCopy && pixelFormat != .mjpeg && devices.isEmpty {
            throw ValidationError("--stream-copy records the camera's MJPEG as is: add --pixel-format mjpeg")
        }
    }

    func run() async throws {
        global.bootstrap()
        try await runRecorder {
            let available = devices.isEmpty ? [] : V4L2Discovery().devices()
            var demo = DemoOptions(
                outputDirectory: output, durationSeconds: duration, cameraCount: cameras,
                width: size.width, height: size.height, framesPerSecond: fps,
                pixelFormat: pixelFormat ?? (devices.isEmpty ? .yuyv422 : nil),
                segmentSeconds: segmentSeconds, timelapseIntervalSeconds: timelapseInterval,
                encoding: streamCopy ? .streamCopy : .h264(EncoderSettings(preset: preset, rateControl: .crf(crf))))
            demo.devices = try devices.map { try CameraSelection.find($0, in: available) }
            demo.chaos = chaos
            demo.motion = motion
            demo.watchdogSeconds = watchdogSeconds
            demo.hooks = hooks
            demo.hookTimeoutSeconds = hookTimeout
            demo.listen = listen
            return try demo.recorderOptions()
        }
    }
}
