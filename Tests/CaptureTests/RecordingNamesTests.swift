@testable import Capture
import CaptureTesting
import Foundation
import Testing

/// File names are what users and their scripts rely on: pinned literally as README.md shows
/// them, `ROOT/CAMERA/video/2026-11-22/CAMERA-20261122T065700Z.mp4`.
@Suite struct RecordingNamesTests {
    /// 2026-11-22 06:57:00.250 UTC.
    private let instant: Int64 = 1_795_330_620_250_000_000

    @Test func segmentsAndStillsAreNamedByTheirUTCSecond() throws {
        let dir = try TemporaryDirectory()
        defer { dir.remove() }
        let layout = StorageLayout(root: dir.path)
        #expect(try layout.segment(camera: "CAM", startingAt: instant, extension: "mp4") == dir.path + "/CAM/video/2026-11-22/CAM-20261122T065700Z.mp4")
        #expect(try layout.still(camera: "CAM", at: instant) == dir.path + "/CAM/stills/2026-11-22/CAM-20261122T065700Z.jpg")
        #expect(try layout.snapshot(camera: "CAM", at: instant) == dir.path + "/CAM/snapshots/2026-11-22/CAM-20261122T065700Z.jpg")
        // The day folder is the UTC day: one second before midnight UTC is still the 21st.
        #expect(try layout.segment(camera: "CAM", startingAt: 1_795_305_599_000_000_000, extension: "mkv") == dir.path + "/CAM/video/2026-11-21/CAM-20261121T235959Z.mkv")
        #expect(documentedStamp(instant) == "20261122T065700Z")
    }

    @Test func aSecondFileInTheSameSecondIsNumberedAfterTheFirst() throws {
        let dir = try TemporaryDirectory()
        defer { dir.remove() }
        let layout = StorageLayout(root: dir.path)
        let first = try layout.segment(camera: "CAM", startingAt: instant, extension: "mp4")
        _ = FileManager.default.createFile(atPath: first, contents: nil)
        #expect(try layout.segment(camera: "CAM", startingAt: instant, extension: "mp4") == dir.path + "/CAM/video/2026-11-22/CAM-20261122T065700Z_02.mp4")
        // A file still being written counts as taken too.
        _ = FileManager.default.createFile(atPath: dir.path + "/CAM/video/2026-11-22/CAM-20261122T065700Z_02.mp4.partial", contents: nil)
        #expect(try layout.segment(camera: "CAM", startingAt: instant, extension: "mp4") == dir.path + "/CAM/video/2026-11-22/CAM-20261122T065700Z_03.mp4")
    }

    @Test func aCameraIdBecomesASafeFolderName() {
        #expect(StorageLayout.cameraFolder("v4l2:usb-Logitech_C920_AB12-video-index0")
                == "v4l2-usb-Logitech_C920_AB12-video-index0")
        #expect(StorageLayout.cameraFolder("front door/../x") == "front-door-..-x")
    }
}
