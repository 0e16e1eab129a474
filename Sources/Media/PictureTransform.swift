/// Rotation in quarter turns, clockwise, as a camera connection applies it.
public enum Rotation: Int, Sendable, CaseIterable {
    case none = 0, clockwise90 = 90, upsideDown = 180, clockwise270 = 270

    /// Width and height after rotating a `width`×`height` picture.
    public func size(width: Int, height: Int) -> (width: Int, height: Int) {
        self == .clockwise90 || self == .clockwise270 ? (height, width) : (width, height)
    }
}

/// Rotates and mirrors planar YUV 4:2:0 pictures (plane by plane, no colour conversion).
public enum PictureTransform {
    /// Writes `source` rotated by `rotation` and then mirrored left-right if `mirrored` into
    /// `destination`, whose size must be the rotated size.
    public static func apply(_ source: Picture, rotation: Rotation, mirrored: Bool, into destination: Picture) throws(MediaError) {
        try destination.makeWritable()
        for plane in 0..<3 {
            let shift = plane == 0 ? 0 : 1
            let w = source.width >> shift, h = source.height >> shift
            let (src, srcStride) = source.plane(plane)
            let (dst, dstStride) = destination.plane(plane)
            let (dw, _) = rotation.size(width: w, height: h)
            for y in 0..<h {
                let row = src + y * srcStride
                for x in 0..<w {
                    var dx: Int, dy: Int
                    switch rotation {
                    case .none: (dx, dy) = (x, y)
                    case .clockwise90: (dx, dy) = (h - 1 - y, x)
                    case .upsideDown: (dx, dy) = (w - 1 - x, h - 1 - y)
                    case .clockwise270: (dx, dy) = (y, w - 1 - x)
                    }
                    if mirrored { dx = dw - 1 - dx }
                    dst[dy * dstStride + dx] = row[x]
                }
            }
        }
    }
}
