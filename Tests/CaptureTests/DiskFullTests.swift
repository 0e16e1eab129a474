import Capture
import CaptureTesting
import Foundation
import Media
import SystemPackage
import Testing

/// Mounting a small tmpfs needs root (CI runs as root on these machines).
@Suite(.enabled(if: getuid() == 0, "needs root to mount a size-limited tmpfs"), .timeLimit(.minutes(2)))
struct DiskFullTests {
    @Test func fullDiskIsReportedAndRecordingResumesWhileOtherCamerasGoOn() async throws {
        let small = try SmallDisk("vigil-full", size: "64k")
        defer { small.remove() }
        let other = try TemporaryDirectory("vigil-other")
        defer { other.remove() }
        // Nearly lossless, so the small disk fills within seconds.
        let heavy = EncoderSettings(preset: "ultrafast", rateControl: .crf(0))
        let full = try SegmentedMovieOutput(.init(storageRoot: small.path, segmentSeconds: 1, encoding: .h264(heavy)))
        let (fullSession, fullLog) = try startSession(
            device: SyntheticCamera.device(index: 1),
            format: .size(width: 320, height: 240, pixelFormat: .yuyv422), fps: 30, outputs: [(full, .init())])
        let fine = try SegmentedMovieOutput(.init(storageRoot: other.path, segmentSeconds: 1))
        let (otherSession, otherLog) = try startSession(
            device: SyntheticCamera.device(index: 2),
            format: .size(width: 160, height: 120, pixelFormat: .yuyv422), fps: 15, outputs: [(fine, .init())])

        #expect(await waitUntil(seconds: 30) { fullLog.errors.contains { $0.contains("disk is full") } })
        let message = try #require(fullLog.errors.first { $0.contains("disk is full") })
        #expect(message.contains("No space left on device"))
        #expect(message.contains("free space under \(small.path)"))
        // The event carries the cause: FFmpeg's AVERROR(ENOSPC) from the muxer's write, as an Errno.
        #expect(fullLog.all.contains { if case .runtimeError(_, _, let code?) = $0 { code.isDiskFull } else { false } })
        #expect(fullSession.isRunning)

        // Free the disk: recording resumes by itself with a new segment.
        let segmentsBefore = fullLog.segments.count
        for f in RecordingInspector.files(under: small.path, endingWith: ".mp4") { try FileManager.default.removeItem(atPath: f) }
        #expect(await waitUntil(seconds: 30) {
            fullLog.segments.dropFirst(segmentsBefore).contains { !$0.isIncomplete && $0.frameCount > 0 }
        })
        await fullSession.stop()
        await otherSession.stop()
        for f in RecordingInspector.files(under: small.path, endingWith: ".mp4") {
            #expect(RecordingInspector.ffprobeProblem(f) == nil, "\(f) does not decode")
        }
        #expect(RecordingInspector.files(under: small.path, endingWith: ".partial").isEmpty)

        // The other camera never noticed.
        #expect(otherLog.errors.isEmpty)
        let decoded = try RecordingInspector.files(under: other.path, endingWith: ".mp4").map { try RecordingInspector.decode($0) }
        let seqs = expectContiguous(decoded)
        #expect(seqs.count == otherSession.capturedFrameCount)
    }

    /// A resume after a full disk opens one segment. The default encoder holds frames back (its
    /// lookahead), and the retry a second after the failure falls inside a 10 s slot: every frame
    /// marked to start the retry's segment before the encoder gave out the first one opened one
    /// more (a 1-frame file, then `_02` in the same second).
    @Test func aResumeAfterAFullDiskOpensOneSegment() async throws {
        let small = try SmallDisk("vigil-resume", size: "64k")
        defer { small.remove() }
        let movie = try SegmentedMovieOutput(.init(storageRoot: small.path, segmentSeconds: 10))
        let (session, log) = try startSession(
            format: .size(width: 320, height: 240, pixelFormat: .yuyv422), fps: 30, outputs: [(movie, .init())])
        #expect(await waitUntil(seconds: 30) { log.errors.contains { $0.contains("disk is full") } })
        // Room for the resumed segments: the files of before the failure go.
        for f in RecordingInspector.files(under: small.path, endingWith: ".mp4") { try FileManager.default.removeItem(atPath: f) }
        let started = { log.all.filter { if case .segmentStarted = $0 { true } else { false } }.count }
        let before = started()
        #expect(await waitUntil(seconds: 30) { started() >= before + 2 })
        await session.stop()
        let names = log.all.compactMap { if case .segmentStarted(_, let path, _) = $0 { (path as NSString).lastPathComponent } else { nil } }
        #expect(!names.contains { $0.contains("Z_02.") }, "a second file in the same second: \(names)")
        // (The last was open at the stop, which may have come one frame after it began.)
        let oneFrame = log.segments.dropLast().filter { $0.frameCount == 1 && !$0.isIncomplete }
        #expect(oneFrame.isEmpty, "1-frame segments: \(oneFrame.map(\.path))")
    }

    /// A durable write (stills, snapshots) that meets a full disk throws a typed, disk-full error.
    @Test func aDurableWriteOnAFullDiskIsRecognisedAsFull() throws {
        let small = try SmallDisk("vigil-write-full", size: "64k")
        defer { small.remove() }
        let bytes = [UInt8](repeating: 7, count: 256 * 1024)
        let error = #expect(throws: CaptureError.self) {
            try bytes.withUnsafeBytes { try DurableFile.write($0, to: small.path + "/still.jpg") }
        }
        #expect(error?.isDiskFull == true)
        #expect(error?.errno == .noSpace)
        #expect(error?.description == "write \(small.path)/still.jpg.partial: No space left on device")
        #expect(!FileManager.default.fileExists(atPath: small.path + "/still.jpg.partial"), "the partial file is removed")
    }
}

/// The cause decides, not the text: ENOSPC from a file call is a full disk, from VIDIOC_STREAMON
/// it is USB bandwidth.
@Suite struct CaptureErrorTests {
    @Test(arguments: ["write", "fsync", "rename", "create"])
    func aFileCallWithENOSPCOrEDQUOTIsAFullDisk(operation: String) {
        #expect(CaptureError.file(operation: operation, path: "/x", errno: .noSpace).isDiskFull)
        #expect(CaptureError.file(operation: operation, path: "/x", errno: .diskQuotaExceeded).isDiskFull)
        #expect(!CaptureError.file(operation: operation, path: "/x", errno: .ioError).isDiskFull)
    }

    @Test func enospcFromStreamOnIsUSBBandwidthNotADiskFull() {
        let error = CaptureError.deviceCall(call: "VIDIOC_STREAMON", node: "/dev/video0", errno: .noSpace)
        #expect(!error.isDiskFull)
        #expect(error.description.contains("not enough USB bandwidth"))
    }
}
