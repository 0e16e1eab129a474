internal import CFFmpeg

/// An uncompressed picture owned by Vigil (an `AVFrame` with its own buffers). Reused across
/// frames so that steady-state processing allocates nothing.
public final class Picture {
    let frame: UnsafeMutablePointer<AVFrame>

    public var width: Int { Int(frame.pointee.width) }
    public var height: Int { Int(frame.pointee.height) }

    /// A picture with its own planar YUV 4:2:0 (or other) buffers.
    public convenience init(width: Int, height: Int, format: PixelFormat = .yuv420p) throws(MediaError) {
        try self.init(width: width, height: height, avFormat: format.avPixelFormat)
    }

    init(width: Int, height: Int, avFormat: AVPixelFormat) throws(MediaError) {
        guard let f = av_frame_alloc() else { throw MediaError(operation: "av_frame_alloc", message: "out of memory") }
        frame = f
        f.pointee.width = Int32(width)
        f.pointee.height = Int32(height)
        f.pointee.format = avFormat.rawValue
        try check(av_frame_get_buffer(f, 0), "av_frame_get_buffer(\(width)x\(height))")
    }

    /// An empty frame that a decoder fills.
    public init() throws(MediaError) {
        guard let f = av_frame_alloc() else { throw MediaError(operation: "av_frame_alloc", message: "out of memory") }
        frame = f
    }

    deinit {
        var f: UnsafeMutablePointer<AVFrame>? = frame
        av_frame_free(&f)
    }

    /// Makes the buffers writable again if an encoder still holds a reference to them.
    func makeWritable() throws(MediaError) {
        try check(av_frame_make_writable(frame), "av_frame_make_writable")
    }

    /// The luma plane, for analysis (pattern decoding, motion detection).
    public func withLuma<R>(_ body: (UnsafePointer<UInt8>, _ stride: Int) throws -> R) rethrows -> R {
        try body(UnsafePointer(frame.pointee.data.0!), Int(frame.pointee.linesize.0))
    }

    /// Plane `index` (0 = Y, 1 = U/Cb, 2 = V/Cr) with its stride.
    public func plane(_ index: Int) -> (UnsafeMutablePointer<UInt8>, Int) {
        switch index {
        case 0: return (frame.pointee.data.0!, Int(frame.pointee.linesize.0))
        case 1: return (frame.pointee.data.1!, Int(frame.pointee.linesize.1))
        default: return (frame.pointee.data.2!, Int(frame.pointee.linesize.2))
        }
    }
}
