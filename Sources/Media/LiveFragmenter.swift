internal import CFFmpeg
import Glibc

/// Fragmented MP4 in memory, for Media Source Extensions: an init segment (`ftyp`+`moov`),
/// then one `moof`+`mdat` fragment per packet. Packets are copied, never decoded.
///
/// A fragment is written when the next packet arrives (its sample's duration is the gap to
/// the next one), so live view runs one frame behind the camera.
public final class LiveFragmenter {
    private var context: UnsafeMutablePointer<AVFormatContext>?
    private let stream: UnsafeMutablePointer<AVStream>
    private let sink = MemorySink()
    private let held = Packet()
    private var holdsPacket = false
    private let sourceTimeBase = VideoEncoder.timeBase.av
    /// `ftyp` and `moov`: what a player needs before any fragment.
    public let initSegment: [UInt8]

    /// `stream`: H.264 (or H.265) with its parameter sets.
    public init(stream description: StreamDescription) throws(MediaError) {
        let (ctx, st) = try makeCopyStreamOutput(format: "mp4", path: nil, stream: description, tagsHEVCAsHVC1: true)
        context = ctx
        stream = st
        ctx.pointee.pb = sink.context
        ctx.pointee.flags |= AVFMT_FLAG_CUSTOM_IO
        var options: OpaquePointer? = nil
        // frag_custom: a fragment ends only when told (after each packet); empty_moov: the init
        // segment holds no samples; default_base_moof: what MSE expects of data offsets.
        av_dict_set(&options, "movflags", "+empty_moov+default_base_moof+frag_custom", 0)
        let status = avformat_write_header(ctx, &options)
        av_dict_free(&options)
        if status < 0 {
            avformat_free_context(ctx)
            context = nil
            throw MediaError(operation: "write live MP4 header", code: status)
        }
        avio_flush(ctx.pointee.pb)
        initSegment = sink.take()
    }

    deinit {
        if let ctx = context {
            ctx.pointee.pb = nil
            avformat_free_context(ctx)
        }
    }

    /// Adds a packet (`dts` in `VideoEncoder.timeBase`, strictly increasing; shown
    /// `presentationDelay` after it, above 0 only with B-frames) and calls `body` with the
    /// previous packet's fragment, if there was one, and whether that fragment starts at a keyframe.
    public func append(
        _ bytes: UnsafeRawBufferPointer, dts: Int64, presentationDelay: Int64 = 0, keyframe: Bool,
        _ body: (_ fragment: [UInt8], _ keyframe: Bool) -> Void
    ) throws(MediaError) {
        guard let ctx = context else { return }
        if holdsPacket {
            let p = held.packet
            let wasKeyframe = held.isKeyframe
            p.pointee.duration = max(1, dts - p.pointee.dts)
            p.pointee.stream_index = 0
            av_packet_rescale_ts(p, sourceTimeBase, stream.pointee.time_base)
            let status = av_write_frame(ctx, p)
            held.unref()
            holdsPacket = false
            try check(status, "write live MP4 fragment")
            // A null packet ends the fragment (frag_custom).
            try check(av_write_frame(ctx, nil), "flush live MP4 fragment")
            avio_flush(ctx.pointee.pb)
            body(sink.take(), wasKeyframe)
        }
        let (pts, overflow) = dts.addingReportingOverflow(max(0, presentationDelay))
        guard !overflow else { throw MediaError(operation: "live MP4 fragment", message: "a presentation time past what a file can hold") }
        try held.copy(bytes, pts: dts)
        held.packet.pointee.pts = pts
        if keyframe { held.packet.pointee.flags |= AV_PKT_FLAG_KEY }
        holdsPacket = true
    }
}

/// An I/O context that collects what a muxer writes in memory, handed out per fragment.
private final class MemorySink {
    let context: UnsafeMutablePointer<AVIOContext>
    private var bytes: [UInt8] = []
    private static let bufferSize: Int32 = 64 << 10

    init() {
        let buffer = av_malloc(Int(Self.bufferSize))!.assumingMemoryBound(to: UInt8.self)
        context = avio_alloc_context(buffer, Self.bufferSize, 1, nil, nil, nil, nil)!
        context.pointee.opaque = Unmanaged.passUnretained(self).toOpaque()
        context.pointee.write_packet = { opaque, data, size in
            let sink = Unmanaged<MemorySink>.fromOpaque(opaque!).takeUnretainedValue()
            sink.bytes.append(contentsOf: UnsafeBufferPointer(start: data, count: Int(size)))
            return size
        }
    }

    /// What was written since the last call.
    func take() -> [UInt8] {
        defer { bytes.removeAll(keepingCapacity: true) }
        return bytes
    }

    deinit {
        av_freep(&context.pointee.buffer)
        var io: UnsafeMutablePointer<AVIOContext>? = context
        avio_context_free(&io)
    }
}
