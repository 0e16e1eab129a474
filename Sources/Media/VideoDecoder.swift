internal import CFFmpeg

/// Decodes compressed frames (MJPEG from cameras, H.264 from recordings) into pictures.
public final class VideoDecoder {
    let context: UnsafeMutablePointer<AVCodecContext>
    private let packet = Packet()
    private var runScratch: Picture?

    /// `reduction` (MJPEG only, 0…3) decodes at 1/2, 1/4 or 1/8 of the size, at a fraction of
    /// the cost: JPEG's transform yields the smaller picture directly (motion detection).
    public convenience init(format: PixelFormat, reduction: Int = 0) throws(MediaError) {
        guard format == .mjpeg else {
            throw MediaError(operation: "VideoDecoder", message: "\(format) is not compressed; convert it instead")
        }
        try self.init(codecID: AV_CODEC_ID_MJPEG, parameters: nil, lowres: min(3, max(0, reduction)))
    }

    /// A decoder for a camera's H.264/H.265 stream (its parameter sets included).
    public convenience init(stream: StreamDescription) throws(MediaError) {
        try self.init(codecID: stream.parameters.pointee.codec_id, parameters: stream.parameters)
    }

    /// Decodes a run of frames that starts at a keyframe, and nothing else: `picture` ends up
    /// holding the last one (a still from a compressed stream).
    public func decodeRun(_ frames: [UnsafeRawBufferPointer], into picture: Picture) throws(MediaError) {
        avcodec_flush_buffers(context)
        if runScratch == nil { runScratch = try Picture() }
        let scratch = runScratch!
        var decoded = false
        // A failed receive empties its frame: pictures land in `scratch` and move to `picture`.
        func drain() throws(MediaError) {
            while try receive(into: scratch) == .ok {
                av_frame_unref(picture.frame)
                av_frame_move_ref(picture.frame, scratch.frame)
                decoded = true
            }
        }
        for (index, bytes) in frames.enumerated() {
            try packet.copy(bytes, pts: Int64(index))
            defer { packet.unref() }
            _ = try send(packet)
            try drain()
        }
        _ = try send(nil)
        try drain()
        guard decoded else { throw MediaError(operation: "decode frame", message: "the decoder returned no picture") }
    }

    /// Decodes the next frame of an H.264/H.265 stream (frames in decode order, from a keyframe).
    /// True when `picture` holds a new picture; false while the decoder waits for more frames
    /// (it is opened without delay, so that is rare). Corrupt data throws: the caller starts
    /// again at the next keyframe after `reset()`.
    public func decodeNext(_ bytes: UnsafeRawBufferPointer, into picture: Picture) throws(MediaError) -> Bool {
        try packet.copy(bytes, pts: 0)
        defer { packet.unref() }
        _ = try progress(avcodec_send_packet(context, packet.packet), "decode frame")
        var got = false
        if runScratch == nil { runScratch = try Picture() }
        while try receive(into: runScratch!) == .ok {
            av_frame_unref(picture.frame)
            av_frame_move_ref(picture.frame, runScratch!.frame)
            got = true
        }
        return got
    }

    /// Forgets the frames it was given (after a lost or corrupt one).
    public func reset() { avcodec_flush_buffers(context) }

    init(codecID: AVCodecID, parameters: UnsafePointer<AVCodecParameters>?, lowres: Int = 0) throws(MediaError) {
        guard let codec = avcodec_find_decoder(codecID) else {
            throw MediaError(operation: "avcodec_find_decoder", message: "no decoder for \(String(cString: avcodec_get_name(codecID)))")
        }
        guard let ctx = avcodec_alloc_context3(codec) else {
            throw MediaError(operation: "avcodec_alloc_context3", message: "out of memory")
        }
        context = ctx
        if let parameters { avcodec_parameters_to_context(ctx, parameters) }
        ctx.pointee.thread_count = 1
        ctx.pointee.lowres = Int32(lowres)
        try check(avcodec_open2(ctx, codec, nil), "avcodec_open2(decoder)")
    }

    deinit {
        var c: UnsafeMutablePointer<AVCodecContext>? = context
        avcodec_free_context(&c)
    }

    /// Decodes one self-contained compressed frame (a JPEG) into `picture`.
    /// Corrupt data throws; the caller drops the frame.
    public func decode(_ bytes: UnsafeRawBufferPointer, into picture: Picture) throws(MediaError) {
        try packet.copy(bytes, pts: 0)
        defer { packet.unref() }
        _ = try progress(avcodec_send_packet(context, packet.packet), "decode frame")
        av_frame_unref(picture.frame)
        let result = try progress(avcodec_receive_frame(context, picture.frame), "decode frame")
        if result != .ok {
            throw MediaError(operation: "decode frame", message: "decoder returned no picture")
        }
        if picture.frame.pointee.decode_error_flags != 0 {
            throw MediaError(operation: "decode frame", message: "corrupt frame")
        }
    }

    func send(_ packet: Packet?) throws(MediaError) -> Progress {
        try progress(avcodec_send_packet(context, packet?.packet), "avcodec_send_packet")
    }

    func receive(into picture: Picture) throws(MediaError) -> Progress {
        try progress(avcodec_receive_frame(context, picture.frame), "avcodec_receive_frame")
    }
}
