import Capture
import CaptureTesting
import Foundation
import Hummingbird
import HummingbirdTesting
@testable import Recorder
import Testing
@testable import WebServer

@Suite(.timeLimit(.minutes(2))) struct ClipTests {
    @Test func aClipAcrossThreeSegmentsIsWhatVigilExportWritesAndDecodes() async throws {
        let recording = try await Recording.start(segments: 4)
        await recording.stop()
        defer { recording.remove() }
        let segments = try recording.keeper.index.entries(kind: .segment, states: [.complete])
        try #require(segments.count >= 4)
        // From the middle of the second segment to the middle of the fourth, to the millisecond (as the API writes times).
        let from = (segments[1].startNanos + segments[1].endNanos) / 2 / 1_000_000 * 1_000_000
        let to = (segments[3].startNanos + segments[3].endNanos) / 2 / 1_000_000 * 1_000_000
        let time = APITime(timeZone: .current)
        let query = "from=\(time.string(from))&to=\(time.string(to))".replacingOccurrences(of: "+", with: "%2B")
        let expected = recording.dir.path + "/expected.mp4"
        let summary = try SegmentJoiner.export(segments, root: recording.dir.path, from: from, to: to, output: expected, exact: false) { _ in }
        #expect(summary.segments == 3)
        let saved = recording.dir.path + "/clip.mp4"
        try await recording.server().application().test(.router) { client in
            try await client.execute(uri: "/api/v1/cameras/synthetic-0/clip.mp4?\(query)", method: .get) { response in
                #expect(response.status == .ok)
                #expect(response.headers[.contentType] == "video/mp4")
                #expect(response.headers[.contentDisposition] == "attachment; filename=\"synthetic-0-\(ClipRoutes.stamp(from))-\(ClipRoutes.stamp(to)).mp4\"")
                try Data(response.body.readableBytesView).write(to: URL(fileURLWithPath: saved))
            }
            try await client.execute(uri: "/api/v1/cameras/synthetic-0/clip.mp4?from=2020-01-01&to=2020-01-02", method: .get) { response in
                #expect(response.status == .notFound)
                #expect(response.errorMessage?.contains("recorded nothing") == true)
            }
        }
        #expect(RecordingInspector.ffprobeProblem(saved) == nil)
        let decoded = try RecordingInspector.decode(saved)
        #expect(decoded.startsWithKeyframe)
        #expect(decoded.sequences.count == summary.frames)
        // The same bytes as `vigil export` of that range: the same join, sent as it was written.
        #expect(try Data(contentsOf: URL(fileURLWithPath: saved)) == Data(contentsOf: URL(fileURLWithPath: expected)))
        let left = (try? FileManager.default.contentsOfDirectory(atPath: recording.dir.path + "/" + ClipRoutes.folder)) ?? []
        #expect(left.isEmpty, "the clip's file is removed: \(left)")
    }

    /// The client goes away while the join is inside a segment: it stops before the next one and
    /// leaves nothing. The second segment is made a named pipe, so the join is held inside it
    /// (opening it for reading) until the test has cancelled; then the pipe is fed the segment.
    @Test func aCancelledJoinStopsAndLeavesNothing() async throws {
        let recording = try await Recording.start(segments: 3)
        await recording.stop()
        defer { recording.remove() }
        let segments = try recording.keeper.index.entries(kind: .segment, states: [.complete]).sorted { $0.startNanos < $1.startNanos }
        try #require(segments.count >= 3)
        let held = StorageLayout(root: recording.dir.path).absolute(segments[1].path)
        let bytes = try Data(contentsOf: URL(fileURLWithPath: held))
        try #require(unlink(held) == 0 && mkfifo(held, 0o600) == 0)
        let folder = recording.dir.path + "/" + ClipRoutes.folder
        try FileManager.default.createDirectory(atPath: folder, withIntermediateDirectories: true)
        let join = ClipJoin(segments: segments, root: recording.dir.path, range: (0, Int64.max), output: folder + "/cancelled.mp4")
        join.start()
        // A writer opens a pipe without waiting only once a reader has it open: the join.
        var writer: Int32 = -1
        let reading = await waitUntil(seconds: 30) {
            writer = open(held, O_WRONLY | O_NONBLOCK | O_CLOEXEC)
            return writer >= 0
        }
        try #require(reading, "the join never opened the second segment")
        join.cancelAndRemove()
        var written = 0
        let fed = await waitUntil(seconds: 30) {
            let n = bytes.withUnsafeBytes { write(writer, $0.baseAddress! + written, $0.count - written) }
            if n > 0 { written += n }
            return written == bytes.count
        }
        #expect(fed, "the join stopped reading the segment: \(written) of \(bytes.count) bytes taken")
        close(writer)
        #expect(await waitUntil(seconds: 30) { join.ended != nil }, "the join never ended")
        guard case .failure(let error)? = join.ended else {
            Issue.record("the join ran to its end")
            return
        }
        #expect(error is CancellationError, "\(error)")
        #expect(try FileManager.default.contentsOfDirectory(atPath: folder).isEmpty)
    }

    /// A client that does not read holds the join back: the file runs at most a segment and the
    /// window ahead of what the client took, and a cancel releases the waiting join.
    @Test func aClientThatDoesNotReadHoldsTheJoinBack() async throws {
        let recording = try await Recording.start(segments: 3)
        await recording.stop()
        defer { recording.remove() }
        let segments = try recording.keeper.index.entries(kind: .segment, states: [.complete])
        try #require(segments.count >= 3)
        let folder = recording.dir.path + "/" + ClipRoutes.folder
        try FileManager.default.createDirectory(atPath: folder, withIntermediateDirectories: true)
        let join = ClipJoin(segments: segments, root: recording.dir.path, range: (0, Int64.max), output: folder + "/held.mp4", window: 1)
        join.start()
        #expect(await waitUntil(seconds: 30) { join.isHeldBack }, "the join went on with nobody reading")
        #expect(join.ended == nil)
        join.cancelAndRemove()
        #expect(await waitUntil(seconds: 30) { join.ended != nil })
        guard case .failure(let error)? = join.ended else {
            Issue.record("the join ran to its end")
            return
        }
        #expect(error is CancellationError)
    }

    @Test func aClipThatWouldPushTheDiskUnderTheFreeSpaceFloorIsRefused() throws {
        let budget = ClipBudget(limit: 2)
        #expect(throws: Never.self) { _ = try budget.reserve(needed: 10 << 20, room: 11 << 20) }
        #expect(throws: Never.self) { _ = try budget.reserve(needed: 10 << 20, room: nil) }
        do {
            _ = try budget.reserve(needed: 10 << 20, room: -(5 << 20))
            Issue.record("a clip larger than the room above the floor was let through")
        } catch {
            #expect(error.status.code == 507)
            #expect(error.message.contains("needs about 10 MiB") && error.message.contains("has 0 MiB above its free-space floor"))
        }
        #expect(budget.reserved.clips == 0 && budget.reserved.bytes == 0, "refused or dropped clips hold nothing")
    }

    /// Two clips that each fit above the floor but not together: the second is refused while
    /// the first is built, and fits once it is done. They used to be checked one by one.
    @Test func clipsBeingBuiltReserveTheirBytesAndTheirPlaces() throws {
        let budget = ClipBudget(limit: 2)
        var first: ClipBudget.Ticket? = try budget.reserve(needed: 60 << 20, room: 100 << 20)
        #expect(budget.reserved.clips == 1 && budget.reserved.bytes == 60 << 20)
        do {
            _ = try budget.reserve(needed: 60 << 20, room: 100 << 20)
            Issue.record("two clips together crossed the floor")
        } catch {
            #expect(error.status.code == 507 && error.message.contains("beside the 1 clip(s) being built"), "\(error.message)")
        }
        let second = try budget.reserve(needed: 30 << 20, room: 100 << 20)
        // max_clips: a third at once is told to come back.
        do {
            _ = try budget.reserve(needed: 1, room: nil)
            Issue.record("a third clip was built at once with max_clips = 2")
        } catch {
            #expect(error.status == .serviceUnavailable && error.message.contains("max_clips = 2"))
        }
        withExtendedLifetime(first) {}
        first = nil
        #expect(budget.reserved.clips == 1 && budget.reserved.bytes == 30 << 20)
        #expect(throws: Never.self) { _ = try budget.reserve(needed: 60 << 20, room: 100 << 20) }
        withExtendedLifetime(second) {}
    }

    /// Over HTTP: a clip's place is given back once it is sent (one after another with
    /// max_clips = 1), and with no place free a clip is 503 JSON.
    @Test func maxClipsIsAppliedAndEachClipGivesItsPlaceBack() async throws {
        let recording = try await Recording.start(segments: 2)
        await recording.stop()
        defer { recording.remove() }
        var http = HTTPSettings()
        http.maxClips = 1
        let server = recording.server(http)
        try await server.application().test(.router) { client in
            for _ in 0..<2 {
                try await client.execute(uri: "/api/v1/cameras/synthetic-0/clip.mp4?from=today", method: .get) { response in
                    #expect(response.status == .ok)
                }
            }
        }
        #expect(server.clips.reserved.clips == 0 && server.clips.reserved.bytes == 0)
        http.maxClips = 0
        try await recording.server(http).application().test(.router) { client in
            try await client.execute(uri: "/api/v1/cameras/synthetic-0/clip.mp4?from=today", method: .get) { response in
                #expect(response.status == .serviceUnavailable)
                #expect(response.errorMessage?.contains("max_clips = 0") == true)
            }
        }
    }
}
