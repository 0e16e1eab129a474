import CaptureTesting
import Foundation
import Media
import Testing

@Suite struct MediaTests {
    @Test func corruptJPEGIsRefusedNotCrashed() throws {
        let decoder = try VideoDecoder(format: .mjpeg)
        let picture = try Picture(width: 16, height: 16)
        var garbage = [UInt8](repeating: 0x5A, count: 500)
        garbage[0] = 0xFF
        garbage[1] = 0xD8
        #expect(throws: MediaError.self) {
            try garbage.withUnsafeBytes { try decoder.decode($0, into: picture) }
        }
        #expect(throws: MediaError.self) { try JPEGRepair().jpeg(from: UnsafeRawBufferPointer(start: nil, count: 0)) { _ in } }
    }

    @Test func jpegQualityOutsideOneToHundredIsRefused() {
        #expect(throws: MediaError.self) { _ = try JPEGEncoder(width: 64, height: 64, quality: 0) }
    }

    /// x264 would round each frame buffer up to 2 MB huge pages (about 3 MB per 720p camera).
    @Test func openingAnEncoderDeclinesTransparentHugePagesForTheProcess() throws {
        _ = try VideoEncoder(width: 64, height: 64, framesPerSecond: 10, settings: EncoderSettings(preset: "ultrafast"))
        let status = try String(contentsOfFile: "/proc/self/status", encoding: .utf8)
        let line = status.split(separator: "\n").first { $0.hasPrefix("THP_enabled:") }
        #expect(line.map { $0.hasSuffix("0") } == true, "\(line ?? "no THP_enabled line")")
    }

    @Test func encoderAndMuxerRoundTrip() throws {
        let dir = try TemporaryDirectory()
        defer { dir.remove() }
        let encoder = try VideoEncoder(width: 64, height: 48, framesPerSecond: 10, settings: EncoderSettings(preset: "ultrafast"))
        let picture = try Picture(width: 64, height: 48)
        let muxer = try Muxer(path: dir.path + "/a.mp4", container: .fragmentedMP4, stream: encoder.streamDescription())
        let packet = Packet()
        var written = 0
        for i in 0..<25 {
            let (y, stride) = picture.plane(0)
            for row in 0..<48 { (y + row * stride).update(repeating: UInt8(i * 8), count: 64) }
            _ = try encoder.send(picture, pts: Int64(i) * 9000, keyframe: i == 0)
            while try encoder.receive(into: packet) == .ok {
                try muxer.write(packet, dts: packet.pts)
                written += 1
                packet.unref()
            }
        }
        try encoder.sendEndOfStream()
        while try encoder.receive(into: packet) == .ok {
            try muxer.write(packet, dts: packet.pts)
            written += 1
            packet.unref()
        }
        try muxer.finish()
        #expect(written == 25)
        #expect(RecordingInspector.ffprobeProblem(dir.path + "/a.mp4") == nil)
        let reader = try MovieReader(path: dir.path + "/a.mp4")
        var frames: [Double] = []
        while let f = try reader.nextFrame() { frames.append(f.seconds) }
        #expect(frames.count == 25)
        #expect(abs(frames.last! - 2.4) < 0.001)
    }

    @Test func rotationPlacesPixelsWhereExpected() throws {
        let source = try Picture(width: 4, height: 2)
        let (y, stride) = source.plane(0)
        for row in 0..<2 { for col in 0..<4 { y[row * stride + col] = UInt8(row * 4 + col) } }
        let turned = try Picture(width: 2, height: 4)
        try PictureTransform.apply(source, rotation: .clockwise90, mirrored: false, into: turned)
        let (t, ts) = turned.plane(0)
        // Clockwise: the bottom-left source pixel (row 1, col 0 = 4) becomes the top-left.
        #expect(t[0] == 4 && t[1] == 0 && t[3 * ts] == 7 && t[3 * ts + 1] == 3)
        try PictureTransform.apply(source, rotation: .clockwise90, mirrored: true, into: turned)
        #expect(turned.plane(0).0[0] == 0 && turned.plane(0).0[1] == 4)
    }
}
