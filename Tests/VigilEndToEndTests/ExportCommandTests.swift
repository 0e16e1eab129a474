import CaptureTesting
import Foundation
import Media
import Testing

private func demo(_ data: String, _ extra: [String]) {
    let result = VigilBinary.run(["demo", "--output", data, "--size", "160x120", "--fps", "15"] + extra)
    #expect(result.status == 0, "\(result.errorOutput)")
}

private func utcSecond(_ nanos: Int64) -> String {
    let f = DateFormatter()
    f.locale = Locale(identifier: "en_US_POSIX")
    f.timeZone = TimeZone(identifier: "UTC")
    f.dateFormat = "yyyy-MM-dd'T'HH:mm:ss'Z'"
    return f.string(from: Date(timeIntervalSince1970: Double(nanos / 1_000_000_000)))
}

/// `vigil export` from the command line, as a user runs it; every file it writes is decoded.
@Suite(.timeLimit(.minutes(3))) struct ExportCommandTests {
    /// Two recordings with a pause between them: `vigil recordings` shows the gap, and an export
    /// across it joins both with nothing lost or repeated and says it closed the gap.
    @Test func anExportAcrossAGapJoinsBothSidesAndSaysSo() throws {
        let dir = try TemporaryDirectory()
        defer { dir.remove() }
        let data = dir.path + "/rec"
        // Each run's --duration counts from before its camera opens: 3.5 s leaves each run two
        // 1 s slots of frames or more when a busy machine takes a second or two to open it.
        demo(data, ["--duration", "3.5", "--segment-seconds", "1"])
        // The pause the test is about (a stimulus, not a wait for a result): longer than the
        // 2 s below which a pause is not a gap (`SegmentedMovieOutput.gapNanos`).
        Thread.sleep(forTimeInterval: 3)
        demo(data, ["--duration", "3.5", "--segment-seconds", "1"])

        let (segments, gaps) = try indexedSegments(data, camera: "synthetic-0")
        try #require(segments.count >= 4)
        #expect(gaps.count == 1, "\(gaps)")
        // The gap lies between two segments: where one run ended and the next began.
        if let gap = gaps.first {
            #expect(segments.contains { $0.endNanos == gap.from } && segments.contains { $0.startNanos == gap.to })
            #expect(gap.to - gap.from >= 3_000_000_000)
        }
        let text = VigilBinary.run(["recordings", "--data", data])
        #expect(text.output.contains("— gap of "), "\(text.output)")

        let out = dir.path + "/across.mp4"
        let export = VigilBinary.run(["export", "--data", data, "--camera", "synthetic-0", "--from", "yesterday", "--to", "today", "-o", out])
        #expect(export.status == 0, "\(export.errorOutput)")
        #expect(export.output.contains("from \(segments.count) segment(s)"), "\(export.output)")
        #expect(export.output.contains("closed a gap of "), "\(export.output)")
        #expect(RecordingInspector.ffprobeProblem(out) == nil)
        let joined = try RecordingInspector.decode(out)
        #expect(joined.startsWithKeyframe && joined.codec == "h264")
        let recorded = try segments.flatMap { try RecordingInspector.decode($0.path).sequences }
        #expect(!recorded.isEmpty && recorded.allSatisfy { $0 != nil })
        #expect(joined.sequences == recorded, "the export differs from the segments it joined")
        // Timestamps run on across the closed gap: no step back, no pause of the gap's length.
        let reader = try MovieReader(path: out)
        var times: [Double] = []
        while let frame = try reader.nextFrame() { times.append(frame.seconds) }
        #expect(zip(times, times.dropFirst()).allSatisfy { $1 > $0 && $1 - $0 < 0.5 })
    }

    /// `--exact` starts at the first frame captured at or after --from; without it the file
    /// starts at the keyframe before (4 s segments, keyframes every 2 s: --from falls between).
    @Test func exactStartsAtTheFirstFrameAtOrAfterFrom() throws {
        let dir = try TemporaryDirectory()
        defer { dir.remove() }
        let data = dir.path + "/rec"
        // The segment started on a multiple of 4 s is whole; --from is one second into it.
        // (--duration counts from before the camera opens: 11.5 s leaves a whole 4 s slot of
        // frames when a busy machine takes a second or two to open it.)
        demo(data, ["--duration", "11.5", "--segment-seconds", "4"])
        let (segments, _) = try indexedSegments(data, camera: "synthetic-0")
        let whole = try #require(segments.first { $0.startNanos % 4_000_000_000 < 100_000_000 && $0.endNanos - $0.startNanos > 3_500_000_000 })
        let from = (whole.startNanos / 1_000_000_000 + 1) * 1_000_000_000
        let to = from + 2_000_000_000
        // When each of the segment's frames was captured: its start plus the frame's time in the file.
        let reader = try MovieReader(path: whole.path)
        var walls: [Int64] = []
        while let frame = try reader.nextFrame() { walls.append(frame.seconds.isNaN ? 0 : Int64(frame.seconds * 1e9)) }
        let offset = walls.first ?? 0
        walls = walls.map { whole.startNanos + $0 - offset }
        let recorded = try RecordingInspector.decode(whole.path).sequences
        try #require(walls.count == recorded.count)
        let firstAtOrAfter = try #require(walls.firstIndex { $0 >= from })
        // The listing's times are in milliseconds: a frame within 2 ms of --from could go either way.
        let ambiguous = abs(walls[firstAtOrAfter] - from) < 2_000_000 || (firstAtOrAfter > 0 && abs(walls[firstAtOrAfter - 1] - from) < 2_000_000)

        let exact = dir.path + "/exact.mp4", copy = dir.path + "/copy.mp4"
        for (out, flags) in [(exact, ["--exact"]), (copy, [])] {
            let result = VigilBinary.run(["export", "--data", data, "--camera", "synthetic-0", "--from", utcSecond(from), "--to", utcSecond(to), "-o", out] + flags)
            #expect(result.status == 0, "\(result.errorOutput)")
            #expect(result.output.contains(flags.isEmpty ? ", stream copy" : ", re-encoded"), "\(result.output)")
            #expect(RecordingInspector.ffprobeProblem(out) == nil, "\(out)")
        }
        let exactFrames = try RecordingInspector.decode(exact)
        let copyFrames = try RecordingInspector.decode(copy)
        #expect(exactFrames.startsWithKeyframe && copyFrames.startsWithKeyframe)
        let e = exactFrames.sequences.compactMap { $0 }, c = copyFrames.sequences.compactMap { $0 }
        #expect(e.count == exactFrames.sequences.count && c.count == copyFrames.sequences.count)
        #expect(zip(e, e.dropFirst()).allSatisfy { $1 == $0 + 1 } && zip(c, c.dropFirst()).allSatisfy { $1 == $0 + 1 })
        if !ambiguous { #expect(e.first == recorded[firstAtOrAfter], "exact export starts at \(String(describing: e.first))") }
        // The copy starts earlier, at a keyframe no more than 2 s before, and both end on the same frame.
        #expect((c.first ?? 0) < (e.first ?? 0) && (e.first ?? 0) - (c.first ?? 0) <= 31)
        #expect(e.last == c.last)
    }

    /// MJPEG recorded as it came (`vigil demo --stream-copy`, MKV segments) exports to .mkv frame for frame.
    @Test func mjpegRecordingsExportToMKVWithEveryFrame() throws {
        let dir = try TemporaryDirectory()
        defer { dir.remove() }
        let data = dir.path + "/rec"
        // --duration counts from before the camera opens: 4.5 s leaves three 1 s slots of
        // frames or more when a busy machine takes a second or two to open it.
        demo(data, ["--duration", "4.5", "--segment-seconds", "1", "--pixel-format", "mjpeg", "--stream-copy"])
        let (segments, _) = try indexedSegments(data, camera: "synthetic-0")
        try #require(segments.count >= 3)
        #expect(segments.allSatisfy { $0.path.hasSuffix(".mkv") })
        let out = dir.path + "/all.mkv"
        let export = VigilBinary.run(["export", "--data", data, "--camera", "synthetic-0", "--from", "yesterday", "--to", "today", "-o", out])
        #expect(export.status == 0, "\(export.errorOutput)")
        #expect(RecordingInspector.ffprobeProblem(out) == nil)
        let joined = try RecordingInspector.decode(out)
        #expect(joined.codec == "mjpeg" && joined.width == 160 && joined.height == 120)
        let recorded = try segments.flatMap { try RecordingInspector.decode($0.path).sequences }
        #expect(!recorded.isEmpty && recorded.allSatisfy { $0 != nil })
        #expect(joined.sequences == recorded)
        let numbers = recorded.compactMap { $0 }
        #expect(zip(numbers, numbers.dropFirst()).allSatisfy { $1 == $0 + 1 }, "the recording itself has a gap")
    }
}
