@testable import Archive
import CaptureTesting
import Foundation
import Logging
@testable import Recorder
import S3
import Testing

/// What `vigil archive rebuild-index` reads back from each object's metadata: a round trip for
/// every kind, and anything else from a bucket (someone else's objects, damaged or hostile
/// values) refused or clamped, never a trap.
@Suite struct ArchiveMetadataTests {
    @Test(arguments: RecordingIndex.Kind.allCases)
    func aRecordingComesBackAsItWasIndexed(kind: RecordingIndex.Kind) throws {
        let entry = RecordingIndex.Entry(
            kind: kind, camera: "porch ü:1", path: "porch/video/2026-11-27/porch-20261127T010000Z.mp4", startNanos: 1_795_330_620_000_000_001,
            endNanos: 1_795_330_680_000_000_002, frames: 600, bytes: 12_345, codec: "h264", width: 1280, height: 720, state: .recovered)
        let headers = ArchiveMetadata.headers(recording: entry, event: nil)
        #expect(headers.values.allSatisfy { $0.allSatisfy(\.isASCII) }, "header values are ASCII: \(headers)")
        guard case .recording(let back)? = ArchiveMetadata.restore(headers, path: entry.path, bytes: entry.bytes) else {
            Issue.record("not restored: \(headers)")
            return
        }
        #expect(back == entry)
    }

    @Test func anEventPictureComesBackWithItsEvent() throws {
        let event = RecordingIndex.MotionEvent(id: 3, camera: "yard", startNanos: 10, endNanos: 20, peakPercent: 12.5, picture: "p.jpg", reviewedNanos: nil)
        let headers = ArchiveMetadata.headers(recording: nil, event: event)
        guard case .event(let camera, let start, let end, let peak)? = ArchiveMetadata.restore(headers, path: "p.jpg", bytes: 1) else {
            Issue.record("not restored: \(headers)")
            return
        }
        #expect(camera == "yard" && start == 10 && end == 20 && peak == 12.5)
        // An event still under way has nothing to say yet.
        var open = event
        open.endNanos = nil
        #expect(ArchiveMetadata.headers(recording: nil, event: open).isEmpty)
    }

    @Test(arguments: [
        [:],
        ["vigil-kind": "segment"],
        ["vigil-kind": "segment", "vigil-camera": "a", "vigil-start": "20", "vigil-end": "10"],
        ["vigil-kind": "sofa", "vigil-camera": "a", "vigil-start": "1", "vigil-end": "2"],
        ["vigil-kind": "segment", "vigil-camera": "", "vigil-start": "1", "vigil-end": "2"],
        ["vigil-kind": "segment", "vigil-camera": "a", "vigil-start": "99999999999999999999", "vigil-end": "2"],
        // Before 1970: the catalogue refuses such a row, so the archive does too.
        ["vigil-kind": "segment", "vigil-camera": "a", "vigil-start": "-5", "vigil-end": "2"],
        ["vigil-kind": "segment", "vigil-camera": "a", "vigil-start": "+1", "vigil-end": "2"],
        ["vigil-kind": "event", "vigil-camera": "a", "vigil-start": "-9223372036854775808", "vigil-end": "2"],
    ])
    func whatIsNotVigilsIsSkipped(metadata: [String: String]) {
        #expect(ArchiveMetadata.restore(metadata, path: "x", bytes: 1) == nil)
    }

    /// A size S3 states is 0...5 TiB in digits; the index gets nothing else, so no sum of
    /// sizes can overflow (two objects claiming `Int64.max` bytes trapped rebuild-index).
    @Test func sizesOutsideWhatS3StoresAreRefused() {
        #expect(S3Size.parse("0") == 0 && S3Size.parse("5497558138880") == S3Size.maxObjectBytes)
        for bad in [nil, "", "-1", "+1", " 1", "1 ", "5497558138881", "9223372036854775807", "99999999999999999999", "0x10", "1e3"] {
            #expect(S3Size.parse(bad) == nil, "\(bad ?? "nil")")
        }
        let segment = ["vigil-kind": "segment", "vigil-camera": "a", "vigil-start": "1", "vigil-end": "2"]
        #expect(ArchiveMetadata.restore(segment, path: "x", bytes: 1) != nil)
        for bytes in [Int64.max, -1, S3Size.maxObjectBytes + 1] {
            #expect(ArchiveMetadata.restore(segment, path: "x", bytes: bytes) == nil, "\(bytes)")
        }
    }

    @Test func hostileValuesAreClampedNotTrusted() throws {
        let metadata = ["vigil-kind": "segment", "vigil-camera": "a%ZZ", "vigil-start": "-9223372036854775808", "vigil-end": "9223372036854775807",
                        "vigil-frames": "-5", "vigil-width": "99999999999", "vigil-state": "writing", "vigil-codec": String(repeating: "x", count: 10)]
        if case .recording(let entry)? = ArchiveMetadata.restore(metadata, path: "x", bytes: 1) {
            #expect(entry.frames == 0 && entry.width == 0 && entry.state == .complete)
        }
        let event = ["vigil-kind": "event", "vigil-camera": "a", "vigil-start": "1", "vigil-end": "2", "vigil-peak": "nan"]
        guard case .event(_, _, _, let peak)? = ArchiveMetadata.restore(event, path: "x", bytes: 1) else {
            Issue.record("an event with a bad peak is still an event")
            return
        }
        #expect(peak == 0)
        // Random bytes as values: never a trap.
        var random = SeededRandom(seed: 29)
        for _ in 0..<2000 {
            var m: [String: String] = [:]
            for key in ["vigil-kind", "vigil-camera", "vigil-start", "vigil-end", "vigil-frames", "vigil-peak", "vigil-state"] where random.next() % 3 != 0 {
                m[key] = String(decoding: (0..<Int(random.next() % 24)).map { _ in UInt8(truncatingIfNeeded: random.next()) }, as: UTF8.self)
            }
            if random.next() % 2 == 0 { m["vigil-kind"] = ["segment", "still", "event", "timelapse"][Int(random.next() % 4)] }
            _ = ArchiveMetadata.restore(m, path: "x", bytes: Int64(bitPattern: random.next()))
        }
    }
}

/// How the archive waits after its endpoint failed, and what it says.
@Suite struct ArchiveBackoffTests {
    private func failure(_ reason: S3FailureReason) -> S3Error {
        S3Error(reason: reason, status: 503, code: "SlowDown", message: "slow down", request: "PUT vigil/k")
    }

    @Test func waitsDoubleUpToAMinuteOrFiveForWhatAPersonMustFix() {
        var backoff = ArchiveBackoff(logger: Logger(label: "test"), target: "s3://vigil")
        // The ceiling of each wait (the jitter is drawn under it).
        let ceilings = (0..<10).map { _ in backoff.failed(failure(.server)) { $0.upperBound } }
        #expect(ceilings.map { $0 / 1_000_000_000 } == [1, 2, 4, 8, 16, 32, 60, 60, 60, 60])
        #expect(backoff.failed(failure(.server)) { $0.lowerBound } == 0, "full jitter: a wait may be short")
        backoff.succeeded()
        #expect(backoff.failures == 0)
        var keys = ArchiveBackoff(logger: Logger(label: "test"), target: "s3://vigil")
        let longest = (0..<30).map { _ in keys.failed(failure(.auth)) { $0.upperBound } }.max()
        #expect(longest == 300_000_000_000)
    }

    @Test func everyReasonIsExplainedAndOnlyTheEndpointsPauseTheQueue() {
        for reason in S3FailureReason.allCases {
            #expect(!ArchiveBackoff.explain(failure(reason)).isEmpty)
        }
        #expect(S3FailureReason.allCases.filter { !$0.isEndpointWide } == [.checksum, .local])
    }
}

/// `[archive] upload_rate`: what each part waits so that all uploads together keep to the rate.
@Suite struct UploadRateTests {
    @Test func partsWaitTheirTurnAtTheRate() {
        let rate = UploadRate(bytesPerSecond: 1_048_576)
        let now: Int64 = 5_000_000_000
        // Three 1 MiB parts at once: the first goes now, the others 1 s and 2 s later.
        #expect([rate.waitBefore(bytes: 1_048_576, now: now), rate.waitBefore(bytes: 1_048_576, now: now), rate.waitBefore(bytes: 1_048_576, now: now)]
                == [0, 1_000_000_000, 2_000_000_000])
        // Long after, nothing is owed.
        #expect(rate.waitBefore(bytes: 524_288, now: now + 10_000_000_000) == 0)
        #expect(rate.waitBefore(bytes: 1, now: now + 10_000_000_000) == 500_000_000)
    }

    @Test func hugeSizesNeverTrap() {
        let rate = UploadRate(bytesPerSecond: 1024)
        for bytes in [Int64.max, Int64.max / 2, 9_000_000_000_000] {
            #expect(rate.waitBefore(bytes: bytes, now: 0) >= 0)
        }
    }
}
