import ArgumentParser
import Capture
import Foundation
import Media
import Plumbing
import Recorder

/// Records a raw video file through the same pipeline as a camera, as fast as possible.
/// `Scripts/bench-encode` uses it to compare Vigil with the ffmpeg command line.
struct RecordFile: AsyncParsableCommand {
    static let configuration = CommandConfiguration(
        commandName: "record-file",
        abstract: "Record a raw video file into segments, as fast as possible or as live cameras (for benchmarks).",
        shouldDisplay: false
    )

    @Option(name: .shortAndLong, help: "Raw frames file (e.g. from ffmpeg -f rawvideo).")
    var input: String

    @Option(help: "Frame size, WIDTHxHEIGHT.")
    var size: FrameSize

    @Option(help: "Pixel format of the file: yuyv422, nv12 or yuv420p.")
    var pixelFormat: PixelFormat = .yuyv422

    @Option(help: "Nominal frame rate of the file.")
    var fps: Double = 30

    @Option(name: .shortAndLong, help: "Directory to record into.")
    var output: String

    @Option(help: "Segment length in seconds.")
    var segmentSeconds: Int = 60

    @Option(help: "x264 preset.")
    var preset: String = "veryfast"

    @Option(help: "x264 constant quality.")
    var crf: Int = 23

    @Option(help: "Encoder threads (0 = automatic).")
    var threads: Int = 0

    @Option(help: "Cameras that each play the file (with --live).")
    var cameras: Int = 1

    @Flag(help: "Play the file like live cameras: at --fps in real time, looping, late frames dropped.")
    var live = false

    @Option(help: "With --live: seconds to record.")
    var duration: Double = 30

    @OptionGroup var global: GlobalOptions

    func validate() throws {
        try checkOption("--fps", fps, in: 1...1000)
        try checkOption("--segment-seconds", segmentSeconds, in: 1...86_400)
        try checkOption("--crf", crf, in: 0...51)
        try checkOption("--threads", threads, in: 0...256)
        try checkOption("--cameras", cameras, in: 1...64)
        try checkOption("--duration", duration, in: 0.001...86_400, " seconds")
        if cameras > 1 && !live { throw ValidationError("--cameras needs --live") }
    }

    func run() async throws {
        global.bootstrap()
        do {
            try await FileRecording(
                path: input, pixelFormat: pixelFormat, width: size.width, height: size.height, frameRate: fps,
                outputDirectory: output, segmentSeconds: segmentSeconds,
                encoder: EncoderSettings(preset: preset, rateControl: .crf(crf), threads: threads),
                cameraCount: cameras, live: live, durationSeconds: duration
            ).run()
        } catch {
            Console.error("vigil: \(error)\n")
            throw ExitCode.failure
        }
    }
}
