internal import CFFmpeg

/// Encodes pictures as baseline JPEG stills (FFmpeg's MJPEG encoder, full-range 4:2:0).
public final class JPEGEncoder {
    private let context: UnsafeMutablePointer<AVCodecContext>
    private let packet = Packet()
    public let width: Int
    public let height: Int
    public let quality: Int
    /// Encoders insist on increasing timestamps, even for independent images.
    private var nextPTS: Int64 = 0

    /// `quality` runs from 1 (smallest) to 100 (best), like most JPEG tools.
    public init(width: Int, height: Int, quality: Int, chroma: PixelFormat = .yuv420p) throws(MediaError) {
        guard (1...100).contains(quality) else {
            throw MediaError(operation: "JPEG encoder", message: "quality \(quality) is outside 1–100")
        }
        guard let codec = avcodec_find_encoder(AV_CODEC_ID_MJPEG), let ctx = avcodec_alloc_context3(codec) else {
            throw MediaError(operation: "avcodec_find_encoder(mjpeg)", message: "this FFmpeg has no JPEG encoder")
        }
        context = ctx
        self.width = width
        self.height = height
        self.quality = quality
        ctx.pointee.width = Int32(width)
        ctx.pointee.height = Int32(height)
        ctx.pointee.pix_fmt = chroma == .yuyv422 ? AV_PIX_FMT_YUVJ422P : AV_PIX_FMT_YUVJ420P
        ctx.pointee.time_base = AVRational(num: 1, den: 25)
        ctx.pointee.color_range = AVCOL_RANGE_JPEG
        ctx.pointee.flags |= AV_CODEC_FLAG_QSCALE
        ctx.pointee.thread_count = 1
        // FFmpeg's JPEG quantiser runs 2 (best) … 31 (worst).
        let qscale = 2 + (100 - quality) * 29 / 99
        ctx.pointee.global_quality = Int32(qscale) * cffmpeg_qp2lambda()
        let status = avcodec_open2(ctx, codec, nil)
        if status < 0 {
            var c: UnsafeMutablePointer<AVCodecContext>? = ctx
            avcodec_free_context(&c)
            throw MediaError(operation: "avcodec_open2(jpeg \(width)x\(height))", code: status)
        }
    }

    deinit {
        var c: UnsafeMutablePointer<AVCodecContext>? = context
        avcodec_free_context(&c)
    }

    /// The pixel layout `encode` expects its picture in.
    public func makePicture() throws(MediaError) -> Picture {
        try Picture(width: width, height: height, avFormat: context.pointee.pix_fmt)
    }

    /// Encodes one picture; `body` sees the JPEG bytes (valid only during the call).
    public func encode<R>(_ picture: Picture, _ body: (UnsafeRawBufferPointer) throws -> R) throws -> R {
        picture.frame.pointee.pts = nextPTS
        nextPTS += 1
        picture.frame.pointee.quality = context.pointee.global_quality
        _ = try progress(avcodec_send_frame(context, picture.frame), "encode JPEG")
        defer { packet.unref() }
        guard try progress(avcodec_receive_packet(context, packet.packet), "encode JPEG") == .ok else {
            throw MediaError(operation: "encode JPEG", message: "encoder returned no image")
        }
        return try body(packet.bytes)
    }
}
