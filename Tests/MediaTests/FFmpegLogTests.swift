internal import CFFmpeg
import Foundation
import Synchronization
import Testing
@testable import Media

/// FFmpeg's own lines reach Vigil's logger whole, naming the camera whose thread spoke, and a
/// line that repeats is written once a minute with a count (a hostile camera made 409 lines
/// of "non-existing PPS 0 referenced" in one run, naming no camera). Serialized: the route is
/// the process's one, and each test installs its own sink.
@Suite(.serialized) struct FFmpegLogTests {
    /// An H.264 slice that names a picture parameter set the decoder was never given.
    static let orphanSlice: [UInt8] = [0, 0, 0, 1, 0x65, 0x88, 0x84, 0x00, 0x33, 0xff, 0x12, 0x34, 0x56, 0x78]

    @Test func aDecodersLinesNameTheCameraAndRepeatsAreCounted() throws {
        let lines = Mutex<[FFmpegLog.Line]>([])
        FFmpegLog.route(upTo: FFmpegLog.error) { line in lines.withLock { $0.append(line) } }
        let camera = "ffmpeg-log-test-\(UInt32.random(in: 0 ... .max))"
        let done = DispatchSemaphore(value: 0)
        let thread = Thread {
            FFmpegLog.tagThread(camera: camera)
            defer { done.signal() }
            guard let decoder = try? VideoDecoder(codecID: AV_CODEC_ID_H264, parameters: nil), let picture = try? Picture(width: 16, height: 16) else { return }
            for _ in 0..<20 {
                Self.orphanSlice.withUnsafeBytes { _ = try? decoder.decode($0, into: picture) }
            }
        }
        thread.start()
        done.wait()
        let ours = lines.withLock { $0.filter { $0.camera == camera } }
        let pps = ours.filter { $0.message.contains("PPS") }
        #expect(pps.count == 1, "20 slices, one line a minute: \(ours)")
        #expect(pps.first?.component == "h264" && pps.first?.level == FFmpegLog.error, "\(pps)")
        #expect(ours.allSatisfy { !$0.message.contains("\n") && !$0.message.contains("0x") }, "whole lines without libav's pointer prefix: \(ours)")
    }

    /// A repeat after the minute is written again, with how many were left out; pieces of a
    /// line are joined before it goes out; lines from an untagged thread name no camera.
    @Test func repeatsAfterTheWindowCarryTheirCountAndPiecesAreJoined() {
        let lines = Mutex<[FFmpegLog.Line]>([])
        FFmpegLog.route(upTo: FFmpegLog.error) { line in lines.withLock { $0.append(line) } }
        let done = DispatchSemaphore(value: 0)
        let camera = "ffmpeg-log-window-\(UInt32.random(in: 0 ... .max))"
        Thread {
            FFmpegLog.tagThread(camera: camera)
            for n in 0..<5 { FFmpegLog.take("Invalid NAL unit size (\(n) > 9)\n", level: FFmpegLog.error, component: "NULL", now: 1_000 + Int64(n)) }
            FFmpegLog.take("Invalid NAL unit size (7 > 9)\n", level: FFmpegLog.error, component: "NULL", now: 1_000 + FFmpegLog.repeatWindowNanos)
            FFmpegLog.take("a line in ", level: FFmpegLog.error, component: "rtsp", now: 2_000)
            FFmpegLog.take("two pieces\n", level: FFmpegLog.error, component: "rtsp", now: 2_001)
            FFmpegLog.tagThread(camera: nil)
            FFmpegLog.take("said by nobody's thread\n", level: FFmpegLog.error, component: "rtsp", now: 3_000)
            done.signal()
        }.start()
        done.wait()
        let seen = lines.withLock { $0.filter { $0.camera == camera || $0.message == "said by nobody's thread" } }
        #expect(seen.map(\.repeats) == [0, 4, 0, 0], "\(seen)")
        #expect(seen.map(\.message) == ["Invalid NAL unit size (0 > 9)", "Invalid NAL unit size (7 > 9)", "a line in two pieces", "said by nobody's thread"])
        #expect(seen.last?.camera == nil)
    }
}
