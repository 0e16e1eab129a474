import Capture

/// What a camera's movie and timelapse outputs did since the start, over every output a reload
/// put in place: a reload that changes a job replaces its output, and counts read from the
/// outputs of the start alone stopped at the first reload.
struct OutputTally: Sendable, Equatable {
    /// Frames that reached finished or open files.
    var written = 0
    /// Writes that failed (the log says why).
    var failedWrites = 0
    /// Frames the outputs dropped because they fell behind.
    var dropped = 0
    /// Timelapse instants with no still.
    var stillsSkipped = 0
    /// The segment being written now, if any.
    var segmentPath: String?
    /// The camera has a movie output now, or had one.
    var hasMovie = false

    init() {}

    /// The counts of these outputs, and the file being written.
    init(movie: SegmentedMovieOutput?, timelapse: TimelapseOutput?) {
        written = movie?.writtenFrameCount ?? 0
        failedWrites = movie?.failedWriteCount ?? 0
        dropped = (movie?.droppedFrameCount ?? 0) + (timelapse?.droppedFrameCount ?? 0)
        stillsSkipped = timelapse?.skippedShotCount ?? 0
        segmentPath = movie?.currentSegmentPath
        hasMovie = movie != nil
    }

    /// These counts plus `other`'s (the file being written is this one's).
    func adding(_ other: OutputTally) -> OutputTally {
        var sum = self
        sum.written += other.written
        sum.failedWrites += other.failedWrites
        sum.dropped += other.dropped
        sum.stillsSkipped += other.stillsSkipped
        sum.hasMovie = hasMovie || other.hasMovie
        return sum
    }

    /// The closing summary's words for a movie output: frames written (not frames that
    /// arrived), and the writes that failed, which the log explains.
    var recorded: String {
        ", \(written) written to files" + (failedWrites > 0 ? " (\(failedWrites) write(s) failed: see the log)" : "")
    }
}
