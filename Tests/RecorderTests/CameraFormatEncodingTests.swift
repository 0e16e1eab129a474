import Capture
import CaptureTesting
import Foundation
import Media
import Recorder
import Testing

/// A camera that sends NV12 or YUV 4:2:0 is encoded from its own bytes: x264 takes those formats,
/// so there is nothing to convert (issue 15). YUYV still needs converting.
@Suite struct CameraFormatEncodingTests {
    @Test(arguments: [PixelFormat.nv12, .yuv420p])
    func theFrameIsHandedToTheEncoderAsItIs(_ format: PixelFormat) throws {
        let (width, height) = (160, 120)
        let bytes = UnsafeMutableRawBufferPointer.allocate(byteCount: format.frameByteCount(width: width, height: height)!, alignment: 64)
        defer { bytes.deallocate() }
        bytes.initializeMemory(as: UInt8.self, repeating: 128)
        let converter = PictureConverter(range: .video)
        let picture = try converter.picture(from: UnsafeRawBufferPointer(bytes), format: format, width: width, height: height, rotation: .none, mirrored: false)
        #expect(picture.plane(0).0 == bytes.baseAddress?.assumingMemoryBound(to: UInt8.self), "the luma plane is the frame's own bytes")
        #expect(picture.pixelFormat == format)
        // Turned, or for a still (full range), it is converted as before.
        let turned = try converter.picture(from: UnsafeRawBufferPointer(bytes), format: format, width: width, height: height, rotation: .clockwise90, mirrored: false)
        #expect(turned.pixelFormat == .yuv420p && turned.width == height)
        let still = try PictureConverter(range: .jpeg).picture(from: UnsafeRawBufferPointer(bytes), format: format, width: width, height: height, rotation: .none, mirrored: false)
        #expect(still.plane(0).0 != bytes.baseAddress?.assumingMemoryBound(to: UInt8.self))
    }

    /// Every frame of a NV12 / YUV 4:2:0 file, recorded without conversion, decodes to its own
    /// sequence number: the planes were handed over where and as they are.
    @Test(arguments: [PixelFormat.nv12, .yuv420p])
    func aRecordingFromTheCamerasOwnFormatHoldsEveryFrame(_ format: PixelFormat) async throws {
        let dir = try TemporaryDirectory()
        defer { dir.remove() }
        let (width, height, count) = (160, 120, 45)
        // The test pattern in YUYV, turned into the camera's format by ffmpeg.
        let painter = PatternPainter(width: width, height: height)
        var yuyv = Data(count: width * height * 2 * count)
        yuyv.withUnsafeMutableBytes { all in
            for n in 0..<count {
                painter.paint(into: all.baseAddress! + n * width * height * 2, sequence: UInt64(n), wallNanos: Int64(n) * 66_666_667)
            }
        }
        try yuyv.write(to: URL(fileURLWithPath: dir.path + "/in.yuyv"))
        let raw = dir.path + "/in.\(format)"
        let ffmpeg = RecordingInspector.run("/usr/bin/ffmpeg", [
            "-v", "error", "-f", "rawvideo", "-pix_fmt", "yuyv422", "-s", "\(width)x\(height)", "-i", dir.path + "/in.yuyv",
            "-pix_fmt", format.rawValue, "-f", "rawvideo", raw,
        ])
        try #require(ffmpeg.status == 0, "\(ffmpeg.errorOutput)")

        try await FileRecording(
            path: raw, pixelFormat: format, width: width, height: height, frameRate: 15, outputDirectory: dir.path + "/out",
            segmentSeconds: 60, encoder: EncoderSettings(preset: "ultrafast")
        ).run()
        let files = RecordingInspector.files(under: dir.path + "/out", endingWith: ".mp4")
        // Segments are cut on the wall clock's minutes: 3 s of frames may cross one.
        #expect(files.count == 1 || files.count == 2, "\(files)")
        var sequences: [UInt32?] = []
        for file in files {
            #expect(RecordingInspector.ffprobeProblem(file) == nil)
            sequences += try RecordingInspector.decode(file).sequences
        }
        #expect(sequences == (0..<UInt32(count)).map { $0 }, "\(sequences)")
    }
}
