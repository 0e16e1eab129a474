import Capture
import Media

/// Reads the sequence number that the synthetic camera paints into every frame back out of a
/// decoded picture (after H.264 or JPEG), so tests can prove which frames a file holds.
public enum PatternDecoder {
    /// The sequence number (modulo 2^24) in `picture`, or nil if the code is unreadable.
    /// `rotation` and `mirrored` describe how the picture was transformed from the camera's.
    public static func sequence(in picture: Picture, rotation: Rotation = .none, mirrored: Bool = false) -> UInt32? {
        let (w, h) = rotation.size(width: picture.width, height: picture.height)
        return picture.withLuma { luma, stride in
            var bits: UInt32 = 0
            for i in 0..<(SequencePattern.columns * SequencePattern.rows) {
                let b = SequencePattern.block(i, width: w, height: h)
                // Average the inner half of the block, away from edges blurred by compression.
                var sum = 0, count = 0
                for y in (b.y + b.height / 4)..<(b.y + b.height * 3 / 4) {
                    for x in (b.x + b.width / 4)..<(b.x + b.width * 3 / 4) {
                        let (px, py) = cameraToPicture(x: x, y: y, width: w, height: h, rotation: rotation, mirrored: mirrored)
                        sum += Int(luma[py * stride + px])
                        count += 1
                    }
                }
                let mid = (Int(SequencePattern.dark) + Int(SequencePattern.bright)) / 2
                bits = (bits << 1) | (count > 0 && sum / count > mid ? 1 : 0)
            }
            return SequencePattern.sequence(from: bits)
        }
    }

    /// The sequence number painted into a raw YUYV frame, read straight from its luma bytes.
    public static func sequence(inYUYV bytes: UnsafeRawBufferPointer, width: Int, height: Int) -> UInt32? {
        guard bytes.count >= width * height * 2 else { return nil }
        var bits: UInt32 = 0
        for i in 0..<(SequencePattern.columns * SequencePattern.rows) {
            let b = SequencePattern.block(i, width: width, height: height)
            let luma = bytes[(b.y + b.height / 2) * width * 2 + (b.x + b.width / 2) * 2]
            bits = (bits << 1) | (Int(luma) > (Int(SequencePattern.dark) + Int(SequencePattern.bright)) / 2 ? 1 : 0)
        }
        return SequencePattern.sequence(from: bits)
    }

    /// Where camera pixel (x, y) ended up after rotating clockwise and then mirroring.
    static func cameraToPicture(x: Int, y: Int, width w: Int, height h: Int, rotation: Rotation, mirrored: Bool) -> (Int, Int) {
        var (px, py): (Int, Int)
        switch rotation {
        case .none: (px, py) = (x, y)
        case .clockwise90: (px, py) = (h - 1 - y, x)
        case .upsideDown: (px, py) = (w - 1 - x, h - 1 - y)
        case .clockwise270: (px, py) = (y, w - 1 - x)
        }
        if mirrored { px = rotation.size(width: w, height: h).width - 1 - px }
        return (px, py)
    }
}
