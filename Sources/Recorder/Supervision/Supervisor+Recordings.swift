import Capture

/// What a camera's recording holds, read from its movie output.
extension Supervisor {
    /// The frames `cameraID`'s recording wrote into files (nil: no such camera, or it records no
    /// video): a camera taken over by hand-over is in the files once this is above 0.
    public func writtenFrames(of cameraID: String) -> Int? {
        cameras.first { $0.plan.cameraID == cameraID }.flatMap { movie(of: $0)?.writtenFrameCount }
    }

    func movie(of c: Camera) -> SegmentedMovieOutput? {
        c.plan.outputs.lazy.compactMap({ $0.0 as? SegmentedMovieOutput }).first
    }

    func recordedCodec(_ c: Camera) -> String? {
        guard let movie = movie(of: c) else { return nil }
        if case .h264 = movie.settings.encoding { return "h264" }
        return c.session?.activeFormat?.pixelFormat.rawValue
    }
}
