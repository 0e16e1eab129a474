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

    /// A picture whose planes are the caller's bytes (`show(_:)`), for handing a camera's frame
    /// to an encoder that takes its format as is, without a copy. Its one buffer reference owns
    /// nothing: an encoder references the frame only while it is being sent (libx264 copies the
    /// picture into its own frames), so the bytes need outlive only that call.
    init(borrowing format: AVPixelFormat, width: Int, height: Int) throws(MediaError) {
        guard let f = av_frame_alloc() else { throw MediaError(operation: "av_frame_alloc", message: "out of memory") }
        frame = f
        f.pointee.width = Int32(width)
        f.pointee.height = Int32(height)
        f.pointee.format = format.rawValue
        let keep: @convention(c) (UnsafeMutableRawPointer?, UnsafeMutablePointer<UInt8>?) -> Void = { _, _ in }
        guard let owner = av_buffer_create(Self.ownerlessByte, 1, keep, nil, 0) else {
            var freed: UnsafeMutablePointer<AVFrame>? = f
            av_frame_free(&freed)
            throw MediaError(operation: "av_buffer_create", message: "out of memory")
        }
        f.pointee.buf.0 = owner
    }

    /// What the borrowing pictures' buffer reference points at (never read or freed).
    nonisolated(unsafe) private static let ownerlessByte = UnsafeMutablePointer<UInt8>.allocate(capacity: 1)

    /// Points a borrowing picture's planes at `bytes`: tightly packed NV12 or YUV 4:2:0 of its size.
    func show(_ bytes: UnsafeRawBufferPointer) {
        let base = UnsafeMutablePointer(mutating: bytes.baseAddress!.assumingMemoryBound(to: UInt8.self))
        let (w, h) = (width, height)
        let f = frame
        f.pointee.data.0 = base
        f.pointee.linesize.0 = Int32(w)
        f.pointee.data.1 = base + w * h
        if f.pointee.format == AV_PIX_FMT_NV12.rawValue {
            f.pointee.linesize.1 = Int32(w)
            f.pointee.data.2 = nil
            f.pointee.linesize.2 = 0
        } else {
            f.pointee.linesize.1 = Int32(w / 2)
            f.pointee.data.2 = base + w * h + (w / 2) * (h / 2)
            f.pointee.linesize.2 = Int32(w / 2)
        }
    }

    /// The picture's pixel format as Vigil names it (nil for formats a camera never sends).
    public var pixelFormat: PixelFormat? {
        PixelFormat.allCases.first { $0.avPixelFormat.rawValue == frame.pointee.format }
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
