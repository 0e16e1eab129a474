/// Cheap structural checks of a JPEG frame, to drop truncated USB frames before a muxer sees them.
enum JPEGCheck {
    static func looksComplete(_ bytes: UnsafeRawBufferPointer) -> Bool {
        guard bytes.count >= 4 else { return false }
        // SOI at the start; EOI at the end (cameras may pad with zeros after it).
        guard bytes[0] == 0xFF, bytes[1] == 0xD8 else { return false }
        var end = bytes.count
        while end > 2 && bytes[end - 1] == 0 { end -= 1 }
        return bytes[end - 2] == 0xFF && bytes[end - 1] == 0xD9
    }
}
