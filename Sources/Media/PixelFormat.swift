internal import CFFmpeg

/// Pixel formats and compressed formats a camera can deliver or an output can need.
public enum PixelFormat: String, Sendable, Hashable, CaseIterable, CustomStringConvertible {
    /// Packed 4:2:2 (V4L2 `YUYV`), the usual uncompressed webcam format.
    case yuyv422
    /// Semi-planar 4:2:0 (V4L2 `NV12`).
    case nv12
    /// Planar 4:2:0, what H.264 encoders take.
    case yuv420p
    /// Motion JPEG: each frame is a JPEG image.
    case mjpeg

    public var description: String { rawValue }

    /// Compressed formats can be recorded without decoding (stream copy).
    public var isCompressed: Bool { self == .mjpeg }

    /// Bytes of one uncompressed frame, nil for compressed formats.
    public func frameByteCount(width: Int, height: Int) -> Int? {
        switch self {
        case .yuyv422: return width * height * 2
        case .nv12, .yuv420p: return width * height * 3 / 2
        case .mjpeg: return nil
        }
    }

    var avPixelFormat: AVPixelFormat {
        switch self {
        case .yuyv422: return AV_PIX_FMT_YUYV422
        case .nv12: return AV_PIX_FMT_NV12
        case .yuv420p: return AV_PIX_FMT_YUV420P
        case .mjpeg: return AV_PIX_FMT_NONE
        }
    }
}
