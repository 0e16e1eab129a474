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

    /// An H.264/H.265 stream known by its parameter sets (Annex B, e.g. from an SDP or a
    /// keyframe), its size read from them by libavcodec's parser, which needs the picture's
    /// first slice too (`picture`: Annex B, the slice at least; nothing is decoded).
    public convenience init(videoCodec format: PixelFormat, parameterSets: UnsafeRawBufferPointer, picture: UnsafeRawBufferPointer) {
        self.init(videoCodec: format, width: 0, height: 0)
        let id = parameters.pointee.codec_id
        if let base = parameterSets.baseAddress, parameterSets.count > 0,
           let data = av_mallocz(parameterSets.count + Int(AV_INPUT_BUFFER_PADDING_SIZE)) {
            data.copyMemory(from: base, byteCount: parameterSets.count)
            parameters.pointee.extradata = data.assumingMemoryBound(to: UInt8.self)
            parameters.pointee.extradata_size = Int32(parameterSets.count)
        }
        guard let parser = av_parser_init(Int32(id.rawValue)) else { return }
        defer { av_parser_close(parser) }
        var context = avcodec_alloc_context3(nil)
        defer { avcodec_free_context(&context) }
        parser.pointee.flags |= PARSER_FLAG_COMPLETE_FRAMES
        var input = [UInt8](repeating: 0, count: parameterSets.count + picture.count + Int(AV_INPUT_BUFFER_PADDING_SIZE))
        input.withUnsafeMutableBytes { buffer in
            if parameterSets.count > 0 { buffer.baseAddress!.copyMemory(from: parameterSets.baseAddress!, byteCount: parameterSets.count) }
            if picture.count > 0 { (buffer.baseAddress! + parameterSets.count).copyMemory(from: picture.baseAddress!, byteCount: picture.count) }
            var output: UnsafeMutablePointer<UInt8>?
            var outputSize: Int32 = 0
            _ = av_parser_parse2(parser, context, &output, &outputSize, buffer.baseAddress!.assumingMemoryBound(to: UInt8.self),
                                 Int32(parameterSets.count + picture.count), cffmpeg_nopts_value(), cffmpeg_nopts_value(), 0)
        }
        parameters.pointee.width = max(parser.pointee.width, 0)
        parameters.pointee.height = max(parser.pointee.height, 0)
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
