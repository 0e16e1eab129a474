import Capture
import Foundation
import Media
import Plumbing

/// Records a raw video file into segments through normal capture sessions (`vigil record-file`).
///
/// - Once, as fast as possible, without dropping frames: the movie output waits for the
///   encoder instead (`Scripts/bench-encode`).
/// - `live`: `cameraCount` cameras each play the file at its frame rate in real time, looping,
///   for `durationSeconds`, recorded exactly as live cameras are (late frames dropped and
///   counted), so that `Scripts/bench-cameras` compares many cameras with many ffmpeg processes.
public struct FileRecording {
    let path: String
    let pixelFormat: PixelFormat
    let width: Int
    let height: Int
    let frameRate: Double
    let outputDirectory: String
    let segmentSeconds: Int
    let encoder: EncoderSettings
    let cameraCount: Int
    let live: Bool
    let durationSeconds: Double

    public init(
        path: String, pixelFormat: PixelFormat, width: Int, height: Int, frameRate: Double,
        outputDirectory: String, segmentSeconds: Int, encoder: EncoderSettings,
        cameraCount: Int = 1, live: Bool = false, durationSeconds: Double = 0
    ) {
        self.path = path
        self.pixelFormat = pixelFormat
        self.width = width
        self.height = height
        self.frameRate = frameRate
        self.outputDirectory = outputDirectory
        self.segmentSeconds = segmentSeconds
        self.encoder = encoder
        self.cameraCount = cameraCount
        self.live = live
        self.durationSeconds = durationSeconds
    }

    public func run() async throws {
        try StorageCheck.ensureWritable(outputDirectory)
        var sessions: [(session: CaptureSession, movie: SegmentedMovieOutput)] = []
        for index in 0..<cameraCount {
            let session = CaptureSession()
            var settings = SegmentedMovieOutput.Settings(
                storageRoot: outputDirectory, segmentSeconds: segmentSeconds, encoding: .h264(encoder))
            if !live {
                settings.queueCapacity = 8
                settings.dropsLateFrames = false
            }
            let movie = try SegmentedMovieOutput(settings)
            session.beginConfiguration()
            try session.addInput(RawVideoFile.device(
                path: path, pixelFormat: pixelFormat, width: width, height: height, frameRate: frameRate,
                live: live, id: cameraCount == 1 && !live ? "file" : "file-\(index + 1)"))
            try session.setFormat(.size(width: width, height: height, pixelFormat: pixelFormat))
            try session.setFrameRate(frameRate)
            try session.addOutput(movie)
            try session.commitConfiguration()
            sessions.append((session, movie))
        }
        // Each camera's events are watched from before it starts; the first error ends the run.
        let watchers = sessions.map { entry in
            let events = entry.session.events
            return Task { () -> String? in
                for await event in events {
                    if case .runtimeError(_, let message, _) = event { return message }
                    if case .stopped = event { break }
                }
                return nil
            }
        }
        for entry in sessions { try entry.session.startRunning() }
        if live {
            try? await Task.sleep(nanoseconds: UInt64(durationSeconds * 1e9))
            await withTaskGroup(of: Void.self) { group in
                for entry in sessions { group.addTask { await entry.session.stop() } }
            }
        }
        var failure: String?
        for watcher in watchers {
            if let message = await watcher.value, failure == nil { failure = message }
        }
        for entry in sessions {
            if live {
                Console.line("\(entry.session.cameraID): \(entry.session.capturedFrameCount) frames" + OutputTally(movie: entry.movie, timelapse: nil).recorded + ", \(entry.movie.droppedFrameCount) dropped")
            }
        }
        if let failure { throw CaptureError.deviceFailed(camera: "file", reason: failure) }
        let frames = sessions.reduce(0) { $0 + $1.session.capturedFrameCount }
        Console.line("\(frames) frames recorded into \(outputDirectory)")
    }
}
