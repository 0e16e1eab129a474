internal import CFFmpeg

/// Turns a camera's MJPEG frame into a standalone JPEG file without decoding it: FFmpeg's
/// `mjpeg2jpeg` bitstream filter adds the Huffman tables that USB cameras leave out.
public final class JPEGRepair {
    private var filter: UnsafeMutablePointer<AVBSFContext>?
    private let packet = Packet()

    public init() throws(MediaError) {
        guard let bsf = av_bsf_get_by_name("mjpeg2jpeg") else {
            throw MediaError(operation: "av_bsf_get_by_name", message: "this FFmpeg has no mjpeg2jpeg filter")
        }
        try check(av_bsf_alloc(bsf, &filter), "av_bsf_alloc(mjpeg2jpeg)")
        filter!.pointee.par_in.pointee.codec_type = AVMEDIA_TYPE_VIDEO
        filter!.pointee.par_in.pointee.codec_id = AV_CODEC_ID_MJPEG
        try check(av_bsf_init(filter), "av_bsf_init(mjpeg2jpeg)")
    }

    deinit { av_bsf_free(&filter) }

    /// Passes one MJPEG frame through the filter; `body` sees the JPEG file bytes.
    public func jpeg<R>(from mjpeg: UnsafeRawBufferPointer, _ body: (UnsafeRawBufferPointer) throws -> R) throws -> R {
        try packet.copy(mjpeg, pts: 0)
        let sent = av_bsf_send_packet(filter, packet.packet)
        if sent < 0 {
            packet.unref()
            throw MediaError(operation: "mjpeg2jpeg", code: sent)
        }
        defer { packet.unref() }
        guard try progress(av_bsf_receive_packet(filter, packet.packet), "mjpeg2jpeg") == .ok else {
            throw MediaError(operation: "mjpeg2jpeg", message: "filter returned no image")
        }
        return try body(packet.bytes)
    }
}
