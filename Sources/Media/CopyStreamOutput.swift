internal import CFFmpeg

/// An output context of `format` (to `path`, or to custom IO when `nil`) holding one stream that
/// copies `description`'s parameters, in `VideoEncoder.timeBase`: what `Muxer` and
/// `LiveFragmenter` both start from. `tagsHEVCAsHVC1`: Safari and Apple players play H.265 in MP4
/// only when tagged `hvc1` (FFmpeg's default is `hev1`).
func makeCopyStreamOutput(
    format: String, path: String?, stream description: StreamDescription, tagsHEVCAsHVC1: Bool
) throws(MediaError) -> (context: UnsafeMutablePointer<AVFormatContext>, stream: UnsafeMutablePointer<AVStream>) {
    var allocated: UnsafeMutablePointer<AVFormatContext>? = nil
    try check(avformat_alloc_output_context2(&allocated, nil, format, path), "avformat_alloc_output_context2(\(format))")
    guard let ctx = allocated else {
        throw MediaError(operation: "avformat_alloc_output_context2(\(format))", message: "out of memory")
    }
    guard let st = avformat_new_stream(ctx, nil) else {
        avformat_free_context(ctx)
        throw MediaError(operation: "avformat_new_stream", message: "out of memory")
    }
    avcodec_parameters_copy(st.pointee.codecpar, description.parameters)
    st.pointee.codecpar.pointee.codec_tag = 0
    if tagsHEVCAsHVC1 && description.isHEVC { st.pointee.codecpar.pointee.codec_tag = cffmpeg_tag_hvc1() }
    st.pointee.time_base = VideoEncoder.timeBase.av
    return (ctx, st)
}
