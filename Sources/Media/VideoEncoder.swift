internal import CFFmpeg

/// How H.264 is encoded. Defaults suit continuous recording on a small box.
public struct EncoderSettings: Sendable, Equatable {
    public enum RateControl: Sendable, Equatable {
        /// Constant quality (x264 CRF, 0–51, lower is better).
        case crf(Int)
        /// Average bitrate in bits per second.
        case bitrate(Int)
    }

    /// x264 speed preset (ultrafast … veryslow).
    public var preset: String = "veryfast"
    public var rateControl: RateControl = .crf(23)
    /// Keyframe interval in seconds; every segment also starts with a keyframe.
    public var keyframeIntervalSeconds: Double = 2
    /// Encoder threads (0 = FFmpeg chooses).
    public var threads: Int = 0
    /// How much video x264's lookahead may hold back (nil: the preset's own, e.g. 10 frames for
    /// veryfast). Frames inside the encoder are not on disk yet, so this bounds, with the open
    /// fragment, what a crash or power cut can cost.
    public var lookaheadSeconds: Double? = 0.25
    /// SPS/PPS before every keyframe in the packets (as a UVC H.264 camera sends them) instead
    /// of only in the stream header.
    public var parameterSetsInBand = false

    public init(preset: String = "veryfast", rateControl: RateControl = .crf(23), keyframeIntervalSeconds: Double = 2, threads: Int = 0) {
        self.preset = preset
        self.rateControl = rateControl
        self.keyframeIntervalSeconds = keyframeIntervalSeconds
        self.threads = threads
    }
}


public struct Rational: Sendable, Equatable {
    public var numerator: Int32
    public var denominator: Int32
    public init(_ numerator: Int32, _ denominator: Int32) {
        self.numerator = numerator
        self.denominator = denominator
    }
    var av: AVRational { AVRational(num: numerator, den: denominator) }
}

/// H.264 encoder (libx264). Pictures go in with a presentation time; packets come out through
/// `receive`. B-frames are off: packets leave in presentation order, so a recorder can route
/// each packet to the segment its frame belongs to, and each fragment is self-contained.
public final class VideoEncoder {
    /// All encoders and muxers in Vigil count time in 1/90000 s, like MPEG.
    public static let timeBase = Rational(1, 90_000)

    let context: UnsafeMutablePointer<AVCodecContext>
    public let width: Int
    public let height: Int
    private let parameters: UnsafeMutablePointer<AVCodecParameters>

    /// x264 asks for transparent huge pages for every buffer of 1.75 MB or more (its frames), and
    /// rounds the advice up to whole 2 MB pages: where the system grants huge pages on request
    /// (THP "madvise", Debian's default) each 720p frame costs a whole page and more, about 3 MB
    /// per camera in all (measured: 4 cameras 146 → 135 MB). Vigil runs many small encoders, for
    /// which the TLB gain is not worth that memory, so the process opts out once.
    private static let hugePagesDeclined: Void = { _ = cffmpeg_disable_transparent_huge_pages() }()

    /// `pixelFormat`: what pictures come in as: YUV 4:2:0 (converted) or a camera's own NV12 or
    /// YUV 4:2:0, which x264 takes without conversion. The video is 4:2:0 either way.
    public init(
        width: Int, height: Int, framesPerSecond: Double, settings: EncoderSettings, pixelFormat: PixelFormat = .yuv420p
    ) throws(MediaError) {
        _ = Self.hugePagesDeclined
        guard let codec = avcodec_find_encoder_by_name("libx264") else {
            throw MediaError(operation: "avcodec_find_encoder_by_name", message: "libx264 is not available in this FFmpeg build (install libavcodec with x264)")
        }
        guard let ctx = avcodec_alloc_context3(codec) else {
            throw MediaError(operation: "avcodec_alloc_context3", message: "out of memory")
        }
        context = ctx
        self.width = width
        self.height = height
        parameters = avcodec_parameters_alloc()
        ctx.pointee.width = Int32(width)
        ctx.pointee.height = Int32(height)
        ctx.pointee.pix_fmt = pixelFormat == .nv12 ? AV_PIX_FMT_NV12 : AV_PIX_FMT_YUV420P
        ctx.pointee.time_base = VideoEncoder.timeBase.av
        let fpsMilli = Int32(max(1, (framesPerSecond * 1000).rounded()))
        ctx.pointee.framerate = AVRational(num: fpsMilli, den: 1000)
        ctx.pointee.gop_size = Int32(max(1, (framesPerSecond * settings.keyframeIntervalSeconds).rounded()))
        ctx.pointee.max_b_frames = 0
        ctx.pointee.thread_count = Int32(settings.threads)
        // Muxers such as MP4 want SPS/PPS in the stream header.
        if !settings.parameterSetsInBand { ctx.pointee.flags |= AV_CODEC_FLAG_GLOBAL_HEADER }
        var options: OpaquePointer? = nil
        av_dict_set(&options, "preset", settings.preset, 0)
        // A forced keyframe must be an IDR so each segment decodes on its own.
        av_dict_set(&options, "forced-idr", "1", 0)
        // The fastest presets have no lookahead at all; the others get at most this much.
        if let seconds = settings.lookaheadSeconds, !["ultrafast", "superfast"].contains(settings.preset) {
            av_dict_set(&options, "x264-params", "rc-lookahead=\(max(1, Int((framesPerSecond * seconds).rounded())))", 0)
        }
        switch settings.rateControl {
        case .crf(let crf): av_dict_set(&options, "crf", String(crf), 0)
        case .bitrate(let bps): ctx.pointee.bit_rate = Int64(bps)
        }
        let status = avcodec_open2(ctx, codec, &options)
        av_dict_free(&options)
        if status < 0 {
            var c: UnsafeMutablePointer<AVCodecContext>? = ctx
            avcodec_free_context(&c)
            var p: UnsafeMutablePointer<AVCodecParameters>? = parameters
            avcodec_parameters_free(&p)
            throw MediaError(operation: "avcodec_open2(libx264 \(width)x\(height), preset \(settings.preset))", code: status)
        }
        avcodec_parameters_from_context(parameters, ctx)
    }

    deinit {
        var c: UnsafeMutablePointer<AVCodecContext>? = context
        avcodec_free_context(&c)
        var p: UnsafeMutablePointer<AVCodecParameters>? = parameters
        avcodec_parameters_free(&p)
    }

    /// What a muxer needs to write this encoder's packets.
    public func streamDescription() -> StreamDescription { StreamDescription(copying: parameters) }

    /// Sends a picture with presentation time `pts` (in `timeBase`). `keyframe` forces an IDR.
    public func send(_ picture: Picture, pts: Int64, keyframe: Bool) throws(MediaError) -> Progress {
        let f = picture.frame
        f.pointee.pts = pts
        f.pointee.pict_type = keyframe ? AV_PICTURE_TYPE_I : AV_PICTURE_TYPE_NONE
        return try progress(avcodec_send_frame(context, f), "avcodec_send_frame")
    }

    /// Signals the end of input; `receive` then drains the remaining packets.
    public func sendEndOfStream() throws(MediaError) {
        _ = try progress(avcodec_send_frame(context, nil), "avcodec_send_frame(flush)")
    }

    /// Takes the next encoded packet into `packet`.
    public func receive(into packet: Packet) throws(MediaError) -> Progress {
        try progress(avcodec_receive_packet(context, packet.packet), "avcodec_receive_packet")
    }
}
