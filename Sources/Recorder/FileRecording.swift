import Capture
import Foundation
import Media

/// Records a raw video file into segments through a normal capture session, without dropping
/// frames: the movie output waits for the encoder instead.
public struct FileRecording {
    let path: String
    let pixelFormat: PixelFormat
    let width: Int
    let height: Int
    let frameRate: Double
    let outputDirectory: String
    let segmentSeconds: Int
    let encoder: EncoderSettings

    public init(
        path: String, pixelFormat: PixelFormat, width: Int, height: Int, frameRate: Double,
        outputDirectory: String, segmentSeconds: Int, encoder: EncoderSettings
    ) {
        self.path = path
        self.pixelFormat = pixelFormat
        self.width = width
        self.height = height
        self.frameRate = frameRate
        self.outputDirectory = outputDirectory
        self.segmentSeconds = segmentSeconds
        self.encoder = encoder
    }

    public func run() async throws {
        try StorageCheck.ensureWritable(outputDirectory)
        let session = CaptureSession()
        let movie = try SegmentedMovieOutput(.init(
            storageRoot: outputDirectory, segmentSeconds: segmentSeconds, encoding: .h264(encoder),
            queueCapacity: 8, dropsLateFrames: false))
        session.beginConfiguration()
        try session.addInput(RawVideoFile.device(path: path, pixelFormat: pixelFormat, width: width, height: height, frameRate: frameRate))
        try session.setFormat(.size(width: width, height: height, pixelFormat: pixelFormat))
        try session.setFrameRate(frameRate)
        try session.addOutput(movie)
        try session.commitConfiguration()
        let events = session.events
        try session.startRunning()
        for await event in events {
            if case .runtimeError(_, let message, _) = event { throw CaptureError.deviceFailed(camera: "file", reason: message) }
            if case .stopped = event { break }
        }
        Console.line("\(session.capturedFrameCount) frames recorded into \(outputDirectory)")
    }
}
