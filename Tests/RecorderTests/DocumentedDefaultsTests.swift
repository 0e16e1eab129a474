import Capture
import Media
import Recorder
import Testing

/// The defaults README.md and etc/vigil.example.toml promise, pinned as literal values: a
/// test that compared with `RecordJob()` or `RetentionPolicy()` would pass whatever they became.
@Suite struct DocumentedDefaultsTests {
    @Test func whatAFileLeavesOutIsFilledWithTheDocumentedValues() throws {
        let c = try ConfigurationLoader.parse(text: """
            [cameras.a]
            device = "/dev/video0"
            [[record]]
            camera = "a"
            [[timelapse]]
            camera = "a"
            daily_video = true
            [[motion]]
            camera = "a"
            """, path: "vigil.toml")
        let record = try #require(c.cameras.first?.record)
        #expect(record.segmentSeconds == 60)
        #expect(record.schedule.isEmpty, "recording is continuous unless scheduled")
        guard case .h264(let encoder) = record.encoding else {
            Issue.record("default encoding is \(record.encoding), not H.264")
            return
        }
        #expect(encoder.rateControl == .crf(23) && encoder.preset == "veryfast")
        let timelapse = try #require(c.cameras.first?.timelapse)
        #expect(timelapse.intervalSeconds == 60 && timelapse.quality == 90)
        #expect(timelapse.dailyVideo?.framesPerSecond == 30 && timelapse.dailyVideo?.at == "01:00")
        #expect(c.retention.videos.maxAgeDays == 30 && c.retention.videos.maxBytes == nil)
        #expect(c.retention.stills.maxAgeDays == nil && c.retention.stills.maxBytes == nil, "stills are kept as long as there is room")
        #expect(c.retention.minFreePercent == 5 && c.retention.minFreeBytes == 2_147_483_648)
        #expect(c.watchdogSeconds == 10 && c.hookTimeoutSeconds == 30)
        let motion = try #require(c.cameras.first?.motion?.settings)
        #expect(motion.gapSeconds == 10 && motion.maxSeconds == 300, "motion that never stops is cut every 5 minutes")
    }

    /// At least 5 % or 2 GiB free, whichever is larger, but never more than half the disk.
    @Test(arguments: [
        (Int64(1_000_000_000_000), Int64(50_000_000_000)),  // 1 TB: 5 %
        (Int64(20) << 30, Int64(2) << 30),                  // 20 GiB: 5 % is 1 GiB, so 2 GiB
        (Int64(3) << 30, Int64(3) << 29),                   // 3 GiB: 2 GiB would be more than half
    ])
    func theDefaultFreeFloor(diskBytes: Int64, floor: Int64) throws {
        let c = try ConfigurationLoader.parse(text: "[cameras.a]\ndevice = \"synthetic-0\"\n", path: "vigil.toml")
        #expect(c.retention.freeFloor(totalBytes: diskBytes) == floor)
    }
}
