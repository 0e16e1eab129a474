internal import CFFmpeg
import Glibc

/// Container formats Vigil writes. Both stay playable when the writer is killed mid-file.
public enum Container: String, Sendable, CaseIterable {
    /// Fragmented MP4: a fragment is flushed about twice a second, so a crash loses under a second.
    case fragmentedMP4 = "mp4"
    /// Matroska (MKV), written cluster by cluster; the default for stream copy of MJPEG.
    case matroska = "mkv"

    public var fileExtension: String { rawValue }

    var formatName: String {
        switch self {
        case .fragmentedMP4: return "mp4"
        case .matroska: return "matroska"
        }
    }
}

/// Writes one video stream into one file. Packets arrive with presentation times in
/// `VideoEncoder.timeBase`, already relative to the file's start.
public final class Muxer {
    private var context: UnsafeMutablePointer<AVFormatContext>?
    private let stream: UnsafeMutablePointer<AVStream>
    public let path: String
    private var finished = false
    private var sink: FileSink?
    private let sourceTimeBase = VideoEncoder.timeBase.av

    public init(path: String, container: Container, stream description: StreamDescription) throws(MediaError) {
        self.path = path
        let (ctx, st) = try makeCopyStreamOutput(
            format: container.formatName, path: path, stream: description,
            tagsHEVCAsHVC1: container == .fragmentedMP4)
        context = ctx
        stream = st
        // Push every packet to the file at once: what a crash can lose is only the open fragment.
        ctx.pointee.flags |= AVFMT_FLAG_FLUSH_PACKETS
        var options: OpaquePointer? = nil
        if container == .fragmentedMP4 {
            av_dict_set(&options, "movflags", "+empty_moov+default_base_moof", 0)
            av_dict_set(&options, "frag_duration", "500000", 0)
        } else {
            // A cluster is held in memory until it is complete; FFmpeg's default lets it grow to
            // 5 MiB (and its buffer to 8), per camera. Half a second, like an MP4 fragment, at
            // most 1 MiB (a few 1080p MJPEG frames) is all a crash may cost and all it holds.
            av_dict_set(&options, "cluster_time_limit", "500", 0)
            av_dict_set(&options, "cluster_size_limit", "1048576", 0)
        }
        do {
            let sink = try FileSink(path: path)
            self.sink = sink
            ctx.pointee.pb = sink.context
            ctx.pointee.flags |= AVFMT_FLAG_CUSTOM_IO
            try check(avformat_write_header(ctx, &options), "write header of \(path)")
        } catch {
            av_dict_free(&options)
            closeIO()
            // Leave nothing behind: a file without a header holds no video.
            unlink(path)
            throw error
        }
        av_dict_free(&options)
    }

    deinit { closeIO() }

    @discardableResult
    private func closeIO() -> Int32 {
        let status = sink?.close() ?? 0
        sink = nil
        if let ctx = context {
            ctx.pointee.pb = nil
            avformat_free_context(ctx)
            context = nil
        }
        return status
    }

    /// Writes a packet whose decode time `dts` is in `VideoEncoder.timeBase`, relative to the
    /// file's start; it is shown `presentationDelay` later (B-frames), at once otherwise.
    public func write(_ packet: Packet, dts: Int64, presentationDelay: Int64 = 0) throws(MediaError) {
        guard let ctx = context else { throw MediaError(operation: "write", message: "\(path) is already closed") }
        // Times may come from a file on disk or a camera: a sum that does not fit is an error.
        let (pts, overflow) = dts.addingReportingOverflow(presentationDelay)
        guard !overflow else { throw MediaError(operation: "write \(path)", message: "a presentation time past what a file can hold") }
        let p = packet.packet
        p.pointee.pts = pts
        p.pointee.dts = dts
        p.pointee.stream_index = 0
        av_packet_rescale_ts(p, sourceTimeBase, stream.pointee.time_base)
        try check(av_write_frame(ctx, p), "write \(path)")
        if ctx.pointee.pb.pointee.error < 0 {
            throw MediaError(operation: "write \(path)", code: ctx.pointee.pb.pointee.error)
        }
    }

    /// Writes the trailer and closes the file. The file stays readable even if this fails.
    public func finish() throws(MediaError) {
        guard let ctx = context, !finished else { return }
        finished = true
        let status = av_write_trailer(ctx)
        let closeStatus = closeIO()
        try check(status, "finish \(path)")
        try check(closeStatus, "write \(path)")
    }
}
