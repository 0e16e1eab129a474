@testable import Capture
import CaptureTesting
import Foundation
import Testing

/// Cameras that behave but answer in the forms real cameras use (the hostile server's
/// `/dialect/NAME`: fmtp orders and spacing, parameter sets only in the SDP or only in band,
/// control URLs absolute, relative or `*`, Content-Base with and without its slash or scheme,
/// Session and SSRC spellings, audio and ONVIF tracks beside the video, x-dimensions and
/// framerate lines, Digest without qop, H.265 as Dahua sends it). Each is recorded into files
/// that decode without a warning, with the parameter sets in the order the codec needs.
@Suite(.serialized, .timeLimit(.minutes(5))) struct CameraDialectTests {
    static let dialects = HostileCameraServer.dialects.map(\.name)

    @Test func theServerSpeaksEveryDialectTheIssueNames() {
        #expect(Self.dialects.count >= 18, "\(Self.dialects)")
    }

    @Test(arguments: dialects) func isRecorded(_ dialect: String) async throws {
        let dir = try TemporaryDirectory()
        defer { dir.remove() }
        let server = try HostileCameraServer(log: dir.path + "/sessions.log")
        defer { server.stop() }
        let movie = try SegmentedMovieOutput(.init(storageRoot: dir.path + "/rec", segmentSeconds: 1, encoding: .streamCopy))
        let device = NetworkCamera.device(id: "cam", url: server.url(dialect: dialect), settings: NetworkCameraTests.fast)
        let (session, log) = try startSession(device: device, format: .preset(.high), fps: 15, outputs: [(movie, .init())])
        #expect(await waitUntil(seconds: 30) { log.segments.count >= 2 }, "\(dialect): \(log.all)")
        await stopAndDrain(session, log)
        let hevc = dialect.hasPrefix("h265")
        for s in log.segments {
            #expect(RecordingInspector.ffprobeProblem(s.path) == nil, "\(dialect): \(s.path) does not decode")
            let warnings = RecordingInspector.run("/usr/bin/ffprobe", ["-v", "warning", "-count_frames", "-show_entries", "stream=codec_name", "-of", "csv=p=0", s.path])
            #expect(warnings.errorOutput.isEmpty, "\(dialect): ffprobe warns about \(s.path): \(warnings.errorOutput)")
            #expect(warnings.output.trimmingCharacters(in: .whitespacesAndNewlines) == (hevc ? "hevc" : "h264"))
            #expect(SegmentProbe.dimensions(s.path) == "160x90", "\(dialect): \(SegmentProbe.dimensions(s.path))")
            let order = try ParameterSetOrder.inFile(s.path)
            #expect(order == (hevc ? [32, 33, 34] : [7, 8]), "\(dialect): \(s.path) holds parameter sets of NAL types \(order) in its \(hevc ? "hvcC" : "avcC")")
        }
        #expect(!log.all.contains { if case .interrupted = $0 { true } else { false } }, "\(dialect): \(log.all)")
    }
}

/// The NAL types of the parameter sets an MP4's `avcC` or `hvcC` holds, in their order there
/// (ISO/IEC 14496-15): a reader other than the muxer that wrote them.
enum ParameterSetOrder {
    struct Missing: Error {}

    static func inFile(_ path: String) throws -> [Int] {
        let bytes = [UInt8](try Data(contentsOf: URL(fileURLWithPath: path)))
        if let at = find("hvcC", in: bytes) { return hvcC(bytes, from: at + 4) }
        if let at = find("avcC", in: bytes) { return avcC(bytes, from: at + 4) }
        throw Missing()
    }

    private static func find(_ tag: String, in bytes: [UInt8]) -> Int? {
        let t = Array(tag.utf8)
        return bytes.indices.dropLast(3).first { bytes[$0] == t[0] && bytes[$0 + 1] == t[1] && bytes[$0 + 2] == t[2] && bytes[$0 + 3] == t[3] }
    }

    /// 22 bytes of configuration, then arrays of one NAL type each.
    private static func hvcC(_ b: [UInt8], from start: Int) -> [Int] {
        var i = start + 22
        guard i < b.count else { return [] }
        let arrays = Int(b[i])
        i += 1
        var types: [Int] = []
        for _ in 0..<arrays {
            guard i + 3 <= b.count else { break }
            let type = Int(b[i] & 0x3F), count = Int(b[i + 1]) << 8 | Int(b[i + 2])
            i += 3
            for _ in 0..<count {
                guard i + 2 <= b.count else { break }
                types.append(type)
                i += 2 + (Int(b[i]) << 8 | Int(b[i + 1]))
            }
        }
        return types
    }

    /// 5 bytes of configuration, then the SPS list and the PPS list (types read from the units).
    private static func avcC(_ b: [UInt8], from start: Int) -> [Int] {
        var i = start + 5
        var types: [Int] = []
        for mask in [UInt8(0x1F), 0xFF] {
            guard i < b.count else { break }
            let count = Int(b[i] & mask)
            i += 1
            for _ in 0..<count {
                guard i + 2 < b.count else { break }
                let length = Int(b[i]) << 8 | Int(b[i + 1])
                types.append(Int(b[i + 2] & 0x1F))
                i += 2 + length
            }
        }
        return types
    }
}
