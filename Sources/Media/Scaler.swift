internal import CFFmpeg

/// Pixel conversion and scaling with libswscale. The conversion context is cached, so a steady
/// stream of same-sized frames allocates nothing.
public final class Scaler {
    private var context: OpaquePointer?

    public init() {}

    deinit { sws_freeContext(context) }

    /// Frees the conversion context until the next conversion.
    public func reset() {
        sws_freeContext(context)
        context = nil
    }

    /// Converts raw camera bytes (YUYV, NV12, YUV 4:2:0) into `destination`, scaling if sizes differ.
    public func convert(
        raw bytes: UnsafeRawBufferPointer, format: PixelFormat, width: Int, height: Int,
        into destination: Picture
    ) throws(MediaError) {
        guard let expected = format.frameByteCount(width: width, height: height) else {
            throw MediaError(operation: "convert", message: "\(format) is compressed: decode it first")
        }
        guard bytes.count >= expected, let base = bytes.baseAddress?.assumingMemoryBound(to: UInt8.self) else {
            throw MediaError(operation: "convert", message: "truncated \(format) frame: \(bytes.count) of \(expected) bytes")
        }
        var planes: [UnsafePointer<UInt8>?] = [base, nil, nil, nil]
        var strides: [Int32] = [Int32(width), 0, 0, 0]
        switch format {
        case .yuyv422:
            strides[0] = Int32(width * 2)
        case .nv12:
            planes[1] = base + width * height
            strides[1] = Int32(width)
        case .yuv420p:
            planes[1] = base + width * height
            planes[2] = base + width * height + (width / 2) * (height / 2)
            strides[1] = Int32(width / 2)
            strides[2] = Int32(width / 2)
        case .mjpeg, .h264, .hevc:
            break
        }
        try destination.makeWritable()
        try scale(
            planes: planes, strides: strides, width: width, height: height,
            format: format.avPixelFormat, into: destination)
    }

    /// Converts one picture into another (e.g. decoded JPEG 4:2:2 into 4:2:0 for H.264).
    public func convert(_ source: Picture, into destination: Picture) throws(MediaError) {
        let f = source.frame.pointee
        let planes: [UnsafePointer<UInt8>?] = [
            UnsafePointer(f.data.0), UnsafePointer(f.data.1), UnsafePointer(f.data.2), UnsafePointer(f.data.3),
        ]
        let strides: [Int32] = [f.linesize.0, f.linesize.1, f.linesize.2, f.linesize.3]
        try destination.makeWritable()
        try scale(
            planes: planes, strides: strides, width: Int(f.width), height: Int(f.height),
            format: AVPixelFormat(rawValue: f.format), into: destination)
    }

    private func scale(
        planes: [UnsafePointer<UInt8>?], strides: [Int32], width: Int, height: Int,
        format: AVPixelFormat, into destination: Picture
    ) throws(MediaError) {
        let d = destination.frame
        context = sws_getCachedContext(
            context, Int32(width), Int32(height), format,
            d.pointee.width, d.pointee.height, AVPixelFormat(rawValue: d.pointee.format),
            SWS_BILINEAR, nil, nil, nil)
        guard let context else {
            throw MediaError(operation: "sws_getCachedContext", message: "unsupported conversion \(width)x\(height)")
        }
        let dstPlanes: [UnsafeMutablePointer<UInt8>?] = [d.pointee.data.0, d.pointee.data.1, d.pointee.data.2, d.pointee.data.3]
        let dstStrides: [Int32] = [d.pointee.linesize.0, d.pointee.linesize.1, d.pointee.linesize.2, d.pointee.linesize.3]
        let rows = planes.withUnsafeBufferPointer { src in
            strides.withUnsafeBufferPointer { srcStride in
                dstPlanes.withUnsafeBufferPointer { dst in
                    dstStrides.withUnsafeBufferPointer { dstStride in
                        sws_scale(context, src.baseAddress, srcStride.baseAddress, 0, Int32(height), dst.baseAddress, dstStride.baseAddress)
                    }
                }
            }
        }
        try check(rows, "sws_scale")
    }
}
