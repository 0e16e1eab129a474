internal import CFFmpeg
import Glibc

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

    /// An H.264/H.265 stream whose parameter sets are not known yet (a USB camera sends them
    /// in-band; see `withParameterSets(from:)`).
    public init(videoCodec format: PixelFormat, width: Int, height: Int) {
        parameters = avcodec_parameters_alloc()!
        parameters.pointee.codec_type = AVMEDIA_TYPE_VIDEO
        parameters.pointee.codec_id = format == .hevc ? AV_CODEC_ID_HEVC : AV_CODEC_ID_H264
        parameters.pointee.width = Int32(width)
        parameters.pointee.height = Int32(height)
        parameters.pointee.format = AV_PIX_FMT_YUV420P.rawValue
    }

    deinit {
        var p: UnsafeMutablePointer<AVCodecParameters>? = parameters
        avcodec_parameters_free(&p)
    }

    /// Whether the parameter sets (SPS/PPS/VPS) are known: an MP4 header needs them.
    public var hasParameterSets: Bool { parameters.pointee.extradata_size > 0 }

    /// This description with `bytes` (a keyframe in Annex B, its parameter sets inside) as its
    /// parameter sets, for a camera whose SDP carried none: the MP4 muxer picks the SPS/PPS
    /// (and VPS) out of it when it writes `avcC`/`hvcC`.
    public func withParameterSets(from bytes: UnsafeRawBufferPointer) -> StreamDescription {
        let copy = StreamDescription(copying: parameters)
        let p = copy.parameters
        av_freep(&p.pointee.extradata)
        let padding = Int(AV_INPUT_BUFFER_PADDING_SIZE)
        if let data = av_mallocz(bytes.count + padding)?.assumingMemoryBound(to: UInt8.self), let base = bytes.baseAddress {
            data.update(from: base.assumingMemoryBound(to: UInt8.self), count: bytes.count)
            p.pointee.extradata = data
            p.pointee.extradata_size = Int32(bytes.count)
        }
        return copy
    }

    /// Whether both describe the same stream: same codec, size and parameter sets.
    public func matches(_ other: StreamDescription) -> Bool {
        let a = parameters.pointee, b = other.parameters.pointee
        guard a.codec_id == b.codec_id, a.width == b.width, a.height == b.height, a.extradata_size == b.extradata_size else { return false }
        guard a.extradata_size > 0 else { return true }
        return memcmp(a.extradata, b.extradata, Int(a.extradata_size)) == 0
    }

    var isHEVC: Bool { parameters.pointee.codec_id == AV_CODEC_ID_HEVC }

    public var width: Int { Int(parameters.pointee.width) }
    public var height: Int { Int(parameters.pointee.height) }
    public var codecName: String { String(cString: avcodec_get_name(parameters.pointee.codec_id)) }
}
