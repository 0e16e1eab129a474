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
    /// H.264 packets (Annex B), from an RTSP camera or a UVC H.264 camera: recorded as they are.
    case h264
    /// H.265/HEVC packets (Annex B), from an RTSP camera: recorded as they are (`hvc1`).
    case hevc

    public var description: String { rawValue }

    /// Compressed formats can be recorded without decoding (stream copy).
    public var isCompressed: Bool { self == .mjpeg || self == .h264 || self == .hevc }

    /// H.264 or H.265: frames depend on the ones before them back to a keyframe.
    public var isVideoCodec: Bool { self == .h264 || self == .hevc }

    /// Bytes of one uncompressed frame, nil for compressed formats.
    public func frameByteCount(width: Int, height: Int) -> Int? {
        switch self {
        case .yuyv422: return width * height * 2
        case .nv12, .yuv420p: return width * height * 3 / 2
        case .mjpeg, .h264, .hevc: return nil
        }
    }

    var avPixelFormat: AVPixelFormat {
        switch self {
        case .yuyv422: return AV_PIX_FMT_YUYV422
        case .nv12: return AV_PIX_FMT_NV12
        case .yuv420p: return AV_PIX_FMT_YUV420P
        case .mjpeg, .h264, .hevc: return AV_PIX_FMT_NONE
        }
    }
}
