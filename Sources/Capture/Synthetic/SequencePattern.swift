/// The layout of the block code that synthetic frames carry, shared by the painter here and
/// the decoder in CaptureTesting. The top half of the frame is a grid of 8×4 large blocks:
/// 24 bits of frame sequence number (most significant first) and an 8-bit check. Blocks are
/// an eighth of the frame wide and high, so they survive H.264 and JPEG at normal quality.
public enum SequencePattern {
    public static let columns = 8
    public static let rows = 4
    public static let sequenceBits = 24
    public static let dark: UInt8 = 16
    public static let bright: UInt8 = 235

    /// The 32 bits painted for `sequence` (taken modulo 2^24).
    public static func bits(for sequence: UInt64) -> UInt32 {
        let s = UInt32(truncatingIfNeeded: sequence) & 0xFF_FFFF
        return (s << 8) | UInt32(check(s))
    }

    /// The sequence number in `bits`, or nil if the check byte does not match.
    public static func sequence(from bits: UInt32) -> UInt32? {
        let s = bits >> 8
        return UInt8(bits & 0xFF) == check(s) ? s : nil
    }

    static func check(_ s: UInt32) -> UInt8 {
        UInt8((s >> 16) & 0xFF) ^ UInt8((s >> 8) & 0xFF) ^ UInt8(s & 0xFF) ^ 0x5A
    }

    /// Block `index` (row-major) as a pixel rectangle of a `width`×`height` frame.
    public static func block(_ index: Int, width: Int, height: Int) -> (x: Int, y: Int, width: Int, height: Int) {
        let bw = width / columns, bh = height / 8
        return ((index % columns) * bw, (index / columns) * bh, bw, bh)
    }
}
