import Capture
import CaptureTesting
import Foundation
import Media
import Testing

@Suite(.timeLimit(.minutes(2))) struct TimelapseOutputTests {
    /// Each still must be the first frame captured at or after its aligned instant.
    private func expectAligned(_ stills: [StillInfo], frames: [FrameLog.Entry], intervalNanos: Int64) {
        let wallBySequence = Dictionary(frames.map { ($0.sequence, $0.wallNanos) }, uniquingKeysWith: { a, _ in a })
        for still in stills {
            #expect(still.shotWallNanos % intervalNanos == 0, "shot instant not aligned")
            guard let wall = wallBySequence[still.frameSequence] else {
                Issue.record("still used frame \(still.frameSequence), which the frame log never saw")
                continue
            }
            #expect(wall == still.frameWallNanos)
            #expect(wall >= still.shotWallNanos)
            if let previous = wallBySequence[still.frameSequence - 1] {
                #expect(previous < still.shotWallNanos, "an earlier frame was already past the instant")
            }
            #expect(still.path.hasSuffix("-\(documentedStamp(still.shotWallNanos)).jpg"))
        }
        let instants = stills.map(\.shotWallNanos).sorted()
        for (a, b) in zip(instants, instants.dropFirst()) {
            #expect(b - a == intervalNanos, "shots not at consecutive instants")
        }
    }

    @Test func stillsLandOnAlignedInstantsAsValidJPEGs() async throws {
        let dir = try TemporaryDirectory()
        defer { dir.remove() }
        let timelapse = try TimelapseOutput(.init(storageRoot: dir.path, intervalSeconds: 1, quality: 80))
        let frames = FrameLog(dropsLateFrames: false)
        let (session, log) = try startSession(
            format: .size(width: 320, height: 240, pixelFormat: .yuyv422), fps: 10,
            outputs: [(timelapse, .init()), (frames.output, .init())])
        #expect(await waitUntil(seconds: 20) { log.stills.count >= 3 })
        await stopAndDrain(session, log)
        let stills = log.stills
        expectAligned(stills, frames: frames.all, intervalNanos: 1_000_000_000)
        #expect(timelapse.skippedShotCount == 0)
        for still in stills {
            #expect(RecordingInspector.ffprobeProblem(still.path) == nil)
            let decoded = try RecordingInspector.decode(still.path)
            #expect(decoded.width == 320 && decoded.height == 240)
            #expect(decoded.sequences == [UInt32(still.frameSequence)])
        }
        #expect(RecordingInspector.files(under: dir.path, endingWith: ".partial").isEmpty)
    }

    @Test func mjpegStillsAreTheCamerasOwnJPEGNotReencoded() async throws {
        let dir = try TemporaryDirectory()
        defer { dir.remove() }
        let timelapse = try TimelapseOutput(.init(storageRoot: dir.path, intervalSeconds: 1, quality: 50))
        let frames = FrameLog(keepBytes: true, dropsLateFrames: false)
        let (session, log) = try startSession(
            format: .size(width: 320, height: 240, pixelFormat: .mjpeg), fps: 10,
            outputs: [(timelapse, .init()), (frames.output, .init())])
        #expect(await waitUntil(seconds: 20) { log.stills.count >= 2 })
        await stopAndDrain(session, log)
        let bySequence = Dictionary(frames.all.map { ($0.sequence, $0.bytes!) }, uniquingKeysWith: { a, _ in a })
        let repair = try JPEGRepair()
        #expect(!log.stills.isEmpty)
        for still in log.stills {
            let written = try Data(contentsOf: URL(fileURLWithPath: still.path))
            let cameraFrame = try #require(bySequence[still.frameSequence])
            // Byte-identical to the camera's frame after mjpeg2jpeg: nothing was decoded or re-encoded.
            let expected = try cameraFrame.withUnsafeBytes { raw in try repair.jpeg(from: raw) { Data($0) } }
            #expect(written == expected)
            #expect(try RecordingInspector.decode(still.path).sequences == [UInt32(still.frameSequence)])
        }
    }

    @Test func rotatedMJPEGStillIsDecodedAndTurned() async throws {
        let dir = try TemporaryDirectory()
        defer { dir.remove() }
        let timelapse = try TimelapseOutput(.init(storageRoot: dir.path, intervalSeconds: 1))
        let (session, log) = try startSession(
            format: .size(width: 320, height: 240, pixelFormat: .mjpeg), fps: 10,
            outputs: [(timelapse, ConnectionSettings(rotation: .clockwise270))])
        #expect(await waitUntil(seconds: 20) { log.stills.count >= 1 })
        await stopAndDrain(session, log)
        let still = try #require(log.stills.first)
        let decoded = try RecordingInspector.decode(still.path, rotation: .clockwise270)
        #expect(decoded.width == 240 && decoded.height == 320)
        #expect(decoded.sequences == [UInt32(still.frameSequence)])
    }

    @Test func invalidSettingsAreRefusedWithAReason() {
        #expect(throws: CaptureError.invalidSetting("timelapse interval must be at least 1 second, not 0")) {
            _ = try TimelapseOutput(.init(storageRoot: "/tmp", intervalSeconds: 0))
        }
        #expect(throws: CaptureError.invalidSetting("JPEG quality must be 1–100, not 101")) {
            _ = try TimelapseOutput(.init(storageRoot: "/tmp", intervalSeconds: 5, quality: 101))
        }
    }
}
