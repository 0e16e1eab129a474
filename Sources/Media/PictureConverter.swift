internal import CFFmpeg

/// Turns camera frames (raw or MJPEG) into planar 4:2:0 pictures for an encoder, rotated and
/// mirrored as asked. Its buffers are reused, so a steady stream of frames allocates nothing.
public final class PictureConverter {
    /// Video range for H.264, full (JPEG) range for stills.
    public enum Range: Sendable { case video, jpeg }

    private let range: Range
    private let scaler = Scaler()
    private var decoder: VideoDecoder?
    private var decoded: Picture?
    private var runDecoder: VideoDecoder?
    private var runStream: StreamDescription?
    private var upright: Picture?
    private var transformed: Picture?
    /// The camera's own NV12/YUV 4:2:0 bytes, shown as a picture without conversion.
    private var borrowed: Picture?

    public init(range: Range) {
        self.range = range
    }

    private var avFormat: AVPixelFormat { range == .video ? AV_PIX_FMT_YUV420P : AV_PIX_FMT_YUVJ420P }

    /// The picture for one frame. Valid until the next call. Corrupt MJPEG throws.
    ///
    /// NV12 and YUV 4:2:0 frames that need no turning are not converted at all for video: the
    /// picture is the frame's own bytes (valid while they are), which x264 takes as they are.
    /// The picture's `pixelFormat` says which the encoder gets.
    public func picture(
        from bytes: UnsafeRawBufferPointer, format: PixelFormat, width: Int, height: Int,
        rotation: Rotation, mirrored: Bool
    ) throws(MediaError) -> Picture {
        if range == .video && rotation == .none && !mirrored && (format == .nv12 || format == .yuv420p),
           let expected = format.frameByteCount(width: width, height: height) {
            guard bytes.count >= expected else {
                throw MediaError(operation: "convert", message: "truncated \(format) frame: \(bytes.count) of \(expected) bytes")
            }
            if borrowed == nil || borrowed!.width != width || borrowed!.height != height || borrowed!.pixelFormat != format {
                borrowed = try Picture(borrowing: format.avPixelFormat, width: width, height: height)
            }
            borrowed!.show(bytes)
            return borrowed!
        }
        let target = try reuse(&upright, width: width, height: height)
        if format == .mjpeg {
            if decoder == nil { decoder = try VideoDecoder(format: .mjpeg) }
            if decoded == nil { decoded = try Picture() }
            try decoder!.decode(bytes, into: decoded!)
            guard decoded!.width == width, decoded!.height == height else {
                throw MediaError(operation: "decode frame", message: "frame is \(decoded!.width)x\(decoded!.height), expected \(width)x\(height)")
            }
            try scaler.convert(decoded!, into: target)
        } else {
            try scaler.convert(raw: bytes, format: format, width: width, height: height, into: target)
        }
        return try oriented(target, rotation: rotation, mirrored: mirrored)
    }

    private func oriented(_ target: Picture, rotation: Rotation, mirrored: Bool) throws(MediaError) -> Picture {
        guard rotation != .none || mirrored else { return target }
        let size = rotation.size(width: target.width, height: target.height)
        let out = try reuse(&transformed, width: size.width, height: size.height)
        try PictureTransform.apply(target, rotation: rotation, mirrored: mirrored, into: out)
        return out
    }

    /// The picture of the last of `frames`, a run of H.264/H.265 frames from a keyframe: only
    /// these are decoded.
    public func picture(
        decodingRun frames: [UnsafeRawBufferPointer], of stream: StreamDescription, rotation: Rotation, mirrored: Bool
    ) throws(MediaError) -> Picture {
        if runDecoder == nil || runStream !== stream {
            runDecoder = try VideoDecoder(stream: stream)
            runStream = stream
        }
        if decoded == nil { decoded = try Picture() }
        try runDecoder!.decodeRun(frames, into: decoded!)
        let target = try reuse(&upright, width: decoded!.width, height: decoded!.height)
        try scaler.convert(decoded!, into: target)
        return try oriented(target, rotation: rotation, mirrored: mirrored)
    }

    /// A decoded picture in this converter's range, rotated and mirrored as asked.
    public func picture(converting source: Picture, rotation: Rotation, mirrored: Bool) throws(MediaError) -> Picture {
        let target = try reuse(&upright, width: source.width, height: source.height)
        try scaler.convert(source, into: target)
        return try oriented(target, rotation: rotation, mirrored: mirrored)
    }

    /// Whether it holds pictures (between `releaseBuffers` and the next frame it holds none).
    public var holdsPictures: Bool { decoded != nil || upright != nil || transformed != nil || borrowed != nil }

    /// Lets go of the pictures and the decoder until the next frame (an output going idle).
    public func releaseBuffers() {
        (decoder, decoded, upright, transformed, borrowed) = (nil, nil, nil, nil, nil)
        (runDecoder, runStream) = (nil, nil)
        scaler.reset()
    }

    private func reuse(_ slot: inout Picture?, width: Int, height: Int) throws(MediaError) -> Picture {
        if let p = slot, p.width == width, p.height == height { return p }
        let p = try Picture(width: width, height: height, avFormat: avFormat)
        slot = p
        return p
    }
}
