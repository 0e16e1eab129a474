internal import CFFmpeg

/// A compressed packet (`AVPacket`), reused across frames.
public final class Packet {
    let packet: UnsafeMutablePointer<AVPacket>

    public init() {
        packet = av_packet_alloc()!
    }

    deinit {
        var p: UnsafeMutablePointer<AVPacket>? = packet
        av_packet_free(&p)
    }

    public var pts: Int64 { packet.pointee.pts }
    /// Decode time: before `pts` for a frame that B-frames follow in decode order.
    public var dts: Int64 { packet.pointee.dts }
    public var isKeyframe: Bool { packet.pointee.flags & AV_PKT_FLAG_KEY != 0 }
    public var size: Int { Int(packet.pointee.size) }

    /// The packet's bytes (valid until the packet is reused).
    public var bytes: UnsafeRawBufferPointer {
        UnsafeRawBufferPointer(start: packet.pointee.data, count: Int(packet.pointee.size))
    }

    public func unref() { av_packet_unref(packet) }

    /// Points the packet at caller-owned bytes without copying (no FFmpeg buffer). Only for
    /// calls that copy or consume the data before returning, e.g. a muxer write.
    public func borrow(_ bytes: UnsafeRawBufferPointer, pts: Int64, keyframe: Bool) {
        av_packet_unref(packet)
        packet.pointee.data = UnsafeMutablePointer(mutating: bytes.baseAddress?.assumingMemoryBound(to: UInt8.self))
        packet.pointee.size = Int32(bytes.count)
        packet.pointee.pts = pts
        packet.pointee.dts = pts
        packet.pointee.flags = keyframe ? AV_PKT_FLAG_KEY : 0
    }

    /// Copies bytes into a refcounted packet buffer (for calls that keep a reference).
    func copy(_ bytes: UnsafeRawBufferPointer, pts: Int64) throws(MediaError) {
        av_packet_unref(packet)
        try check(av_new_packet(packet, Int32(bytes.count)), "av_new_packet")
        if let base = bytes.baseAddress, bytes.count > 0 {
            packet.pointee.data.update(from: base.assumingMemoryBound(to: UInt8.self), count: bytes.count)
        }
        packet.pointee.pts = pts
        packet.pointee.dts = pts
    }
}
