import Media

/// Makes a JPEG still from a camera frame. An MJPEG frame that needs no rotation or mirroring
/// is already a JPEG: it is only repaired (Huffman tables added), never decoded.
final class StillMaker {
    private let converter = PictureConverter(range: .jpeg)
    private var encoder: JPEGEncoder?
    private var repair: JPEGRepair?
    /// Stills made from the camera's own JPEG without decoding (for status and tests).
    private(set) var passthroughCount = 0

    /// Calls `body` with the JPEG bytes of `frame` at `quality`, and the still's size.
    func jpeg<R>(
        of frame: CapturedFrame, _ connection: ConnectionSettings, quality: Int,
        _ body: (UnsafeRawBufferPointer, _ width: Int, _ height: Int) throws -> R
    ) throws -> R {
        try jpeg(of: frame.bytes, format: frame.format, width: frame.width, height: frame.height, connection, quality: quality, body)
    }

    /// The same for a frame's bytes copied out of it (live snapshots).
    func jpeg<R>(
        of bytes: UnsafeRawBufferPointer, format: PixelFormat, width: Int, height: Int, _ connection: ConnectionSettings,
        quality: Int, _ body: (UnsafeRawBufferPointer, _ width: Int, _ height: Int) throws -> R
    ) throws -> R {
        if format == .mjpeg && !connection.transforms {
            guard JPEGCheck.looksComplete(bytes) else {
                throw MediaError(operation: "decode frame", message: "truncated or corrupt MJPEG frame")
            }
            if repair == nil { repair = try JPEGRepair() }
            passthroughCount += 1
            return try repair!.jpeg(from: bytes) { try body($0, width, height) }
        }
        let picture = try converter.picture(
            from: bytes, format: format, width: width, height: height,
            rotation: connection.rotation, mirrored: connection.isMirrored)
        return try encode(picture, quality: quality, body)
    }

    /// The JPEG of the last frame of `run` (H.264/H.265 frames from a keyframe): only the run is decoded.
    func jpeg<R>(
        ofRun run: [UnsafeRawBufferPointer], stream: StreamDescription, _ connection: ConnectionSettings, quality: Int,
        _ body: (UnsafeRawBufferPointer, _ width: Int, _ height: Int) throws -> R
    ) throws -> R {
        let picture = try converter.picture(decodingRun: run, of: stream, rotation: connection.rotation, mirrored: connection.isMirrored)
        return try encode(picture, quality: quality, body)
    }

    /// The JPEG of a picture a decoder made (a motion event's frame of an H.264/H.265 camera).
    func jpeg<R>(
        ofDecoded picture: Picture, _ connection: ConnectionSettings, quality: Int, _ body: (UnsafeRawBufferPointer) throws -> R
    ) throws -> R {
        let converted = try converter.picture(converting: picture, rotation: connection.rotation, mirrored: connection.isMirrored)
        return try encode(converted, quality: quality) { bytes, _, _ in try body(bytes) }
    }

    private func encode<R>(_ picture: Picture, quality: Int, _ body: (UnsafeRawBufferPointer, _ width: Int, _ height: Int) throws -> R) throws -> R {
        if encoder == nil || encoder!.width != picture.width || encoder!.height != picture.height || encoder!.quality != quality {
            encoder = try JPEGEncoder(width: picture.width, height: picture.height, quality: quality)
        }
        return try encoder!.encode(picture) { try body($0, picture.width, picture.height) }
    }

    /// Whether pictures or an encoder are kept for the next still.
    var holdsBuffers: Bool { encoder != nil || converter.holdsPictures }

    /// Frees the pictures and the JPEG encoder until the next still (a camera that only takes
    /// a still now and then should not hold a few megabytes between them).
    func releaseBuffers() {
        encoder = nil
        converter.releaseBuffers()
    }
}
