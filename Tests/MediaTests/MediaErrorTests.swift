import CaptureTesting
import Foundation
import Media
import Testing

/// A failure in FFmpeg is a `MediaError` that names the call that failed and FFmpeg's own
/// message, and keeps the cause: callers decide on it (a full disk is handled unlike a bad file).
@Suite struct MediaErrorTests {
    @Test func aMissingFileToReadIsATypedErrorWithFFmpegsMessageAndTheErrno() {
        let error = #expect(throws: MediaError.self) { _ = try MovieReader(path: "/nonexistent/vigil.mp4") }
        #expect(error?.description == "open /nonexistent/vigil.mp4: No such file or directory")
        #expect(error?.errno?.rawValue == ENOENT)
        #expect(error?.isDiskFull == false)
    }

    @Test func aFileThatCannotBeCreatedNamesItsPathAndCause() throws {
        let dir = try TemporaryDirectory()
        defer { dir.remove() }
        let encoder = try VideoEncoder(width: 64, height: 48, framesPerSecond: 10, settings: EncoderSettings(preset: "ultrafast"))
        let path = dir.path + "/missing/a.mp4"
        let error = #expect(throws: MediaError.self) {
            _ = try Muxer(path: path, container: .fragmentedMP4, stream: encoder.streamDescription())
        }
        #expect(error?.description == "open \(path) for writing: No such file or directory")
        #expect(error?.errno?.rawValue == ENOENT)
    }

    /// ENOSPC and EDQUOT wrapped by FFmpeg (AVERROR(e) is -e) are a full disk; other errnos are not.
    @Test(arguments: [(ENOSPC, true, "No space left on device"), (EDQUOT, true, "Disk quota exceeded"),
                      (EACCES, false, "Permission denied"), (EIO, false, "Input/output error")])
    func theErrnoBehindAnFFmpegCodeIsKept(errno code: Int32, diskFull: Bool, message: String) {
        let error = MediaError(operation: "write segment", code: -code)
        #expect(error.errno?.rawValue == code)
        #expect(error.isDiskFull == diskFull)
        #expect(error.message == message)
        #expect(error.description == "write segment: \(message)")
    }

    /// FFmpeg's own codes (tags, not errnos) have no errno and are never a full disk.
    @Test func anFFmpegCodeThatIsNoErrnoHasNone() {
        // AVERROR_INVALIDDATA: -MKTAG('I','N','D','A').
        let tag = Int32(bitPattern: UInt32(UInt8(ascii: "I")) | UInt32(UInt8(ascii: "N")) << 8
            | UInt32(UInt8(ascii: "D")) << 16 | UInt32(UInt8(ascii: "A")) << 24)
        let error = MediaError(operation: "decode frame", code: -tag)
        #expect(error.errno == nil)
        #expect(!error.isDiskFull)
        #expect(error.message == "Invalid data found when processing input")
    }

    @Test func anErrorOfVigilsOwnCarriesItsMessageAndNoCode() {
        let error = #expect(throws: MediaError.self) { _ = try JPEGEncoder(width: 64, height: 64, quality: 0) }
        #expect(error?.description == "JPEG encoder: quality 0 is outside 1–100")
        #expect(error?.code == 0)
        #expect(error?.errno == nil)
    }
}
