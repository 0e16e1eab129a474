internal import CFFmpeg

/// Codec parameters of one video stream, as a muxer needs them. Owns its `AVCodecParameters`.
public final class StreamDescription {
    let parameters: UnsafeMutablePointer<AVCodecParameters>

    init(copying source: UnsafePointer<AVCodecParameters>) {
        parameters = avcodec_parameters_alloc()!
        avcodec_parameters_copy(parameters, source)
    }

    /// A Motion JPEG stream, for recording a camera's JPEG frames without decoding them.
    public init(mjpegWidth width: Int, height: Int) {
        parameters = avcodec_parameters_alloc()!
        parameters.pointee.codec_type = AVMEDIA_TYPE_VIDEO
        parameters.pointee.codec_id = AV_CODEC_ID_MJPEG
        parameters.pointee.width = Int32(width)
        parameters.pointee.height = Int32(height)
        parameters.pointee.format = AV_PIX_FMT_YUVJ422P.rawValue
    }

    deinit {
        var p: UnsafeMutablePointer<AVCodecParameters>? = parameters
        avcodec_parameters_free(&p)
    }

    public var width: Int { Int(parameters.pointee.width) }
    public var height: Int { Int(parameters.pointee.height) }
    public var codecName: String { String(cString: avcodec_get_name(parameters.pointee.codec_id)) }
}
