import Archive
import Capture
import CheckedMath
import Dispatch
import Foundation
import Glibc
import Hummingbird
import Plumbing
import Recorder
import Synchronization

/// `GET /api/v1/cameras/{name}/clip.mp4?from=&to=`: the range joined by stream copy, as
/// `vigil export` does, sent while it is being built; with `[cluster]`, every node's files of
/// the range (`ClipRoutes+Site`).
///
/// The join (`SegmentJoiner`) writes a fragmented MP4 (Matroska for MJPEG cameras) into a
/// hidden folder of the storage root, on a thread of its own; the response reads that file as it
/// grows and sends it in 64 KiB chunks (`ClipJoin`: the response waits for the join to have
/// written more, the join for a slow client to catch up). Fragmented MP4 is written front to back
/// and never rewritten, so what was sent stays valid. Memory stays at one chunk whatever the
/// range; a slow client lets the file get ahead on disk by at most a segment and 8 MiB. A client
/// that goes away stops the join before its next segment, and the file is removed in every case.
struct ClipRoutes: Sendable {
    let api: ApiRoutes
    /// `max_clips` and the bytes reserved against the free-space floor.
    let budget: ClipBudget
    /// Where segments no longer kept here are downloaded from for the join (`[archive]`).
    var archive: ArchiveReader? = nil
    /// `[http] token`, sent to the other nodes for their files (`[cluster]`).
    var token: String? = nil
    static let folder = ".web-clips"
    static let chunkSize = 65_536

    func add(to router: Router<WebRequestContext>) {
        router.get("/api/v1/cameras/:name/clip.mp4") { request, context in
            let name = try await api.camera(context)
            let range = try api.time.range(request)
            return try await clip(name, range)
        }
    }

    /// Clips left behind by a crash; removed when the server starts.
    static func removeLeftovers(root: String) {
        try? FileManager.default.removeItem(atPath: root + "/" + folder)
    }

    private func clip(_ camera: String, _ range: (from: Int64, to: Int64)) async throws -> Response {
        let root = api.recorder.root
        let here = try await ApiRoutes.reading(api.recorder.index) {
            try $0.entries(camera: camera, kind: .segment, from: range.from, to: range.to, states: ApiRoutes.servedStates)
        }
        let remote = try await otherNodesSegments(camera, range)
        let segments = here + remote.map(\.entry)
        guard !segments.isEmpty else {
            throw APIError(.notFound, "camera \(camera) recorded nothing between \(api.time.string(range.from)) and \(api.time.string(range.to))")
        }
        // The clip is about as large as its segments. Written where the recordings are, it must
        // not push the disk under the free-space floor: the sweep would delete recordings for it.
        // Archived segments and other nodes' are downloaded next to it first: their bytes count twice.
        let archived = here.filter { $0.location == .archive }
        let needed = segments.totalBytes(\.bytes).saturatingAdding(archived.totalBytes(\.bytes)).saturatingAdding(remote.map(\.entry).totalBytes(\.bytes))
        let policy = api.recorder.configuration.retention
        let ticket = try budget.reserve(needed: needed, room: await ApiRoutes.io.run { Self.roomAboveFloor(root, policy) })
        let container = SegmentJoiner.container(of: segments)
        let fileExtension = container.fileExtension
        let folder = root + "/" + Self.folder
        try await ApiRoutes.io.run { try FileManager.default.createDirectory(atPath: folder, withIntermediateDirectories: true) }
        let output = folder + "/" + UUID().uuidString + "." + fileExtension
        // A header value: only characters that need no quoting (device ids may hold ":").
        let safe = String(camera.map { $0.isASCII && ($0.isLetter || $0.isNumber || $0 == "-" || $0 == "_") ? $0 : "_" })
        let name = "\(safe)-\(Self.stamp(range.from))-\(Self.stamp(range.to)).\(fileExtension)"
        var elsewhere: [String: String] = [:]
        if !archived.isEmpty {
            guard let archive else { throw APIError(.notFound, "the recordings of camera \(camera) in that range are only in the archive, and [archive] is not configured") }
            do {
                for (n, entry) in archived.enumerated() {
                    let local = output + ".archived-\(n)." + (entry.path as NSString).pathExtension
                    elsewhere[entry.path] = local
                    try await archive.download(path: entry.path, to: local, io: ApiRoutes.io)
                }
            } catch {
                let files = Array(elsewhere.values)
                await ApiRoutes.io.run { for file in files { unlink(file) } }
                throw APIError(.badGateway, "the archive cannot give the recordings of camera \(camera) now: \(error)")
            }
        }
        var joined = here
        if !remote.isEmpty {
            do {
                let fetched = try await fetch(remote, next: output)
                joined += fetched.entries
                elsewhere.merge(fetched.files) { a, _ in a }
            } catch {
                let files = Array(elsewhere.values)
                await ApiRoutes.io.run { for file in files { unlink(file) } }
                throw error
            }
        }
        let join = ClipJoin(segments: joined, root: root, range: range, output: output, elsewhere: elsewhere)
        let body = ResponseBody { writer in
            // Held until the clip is sent (or dropped with the response if it never starts).
            withExtendedLifetime(ticket) {}
            join.start()
            defer { join.cancelAndRemove() }
            try await join.stream(into: &writer)
            try await writer.finish(nil)
        }
        return Response(
            status: .ok,
            headers: [
                .contentType: container == .matroska ? "video/x-matroska" : "video/mp4",
                .contentDisposition: "attachment; filename=\"\(name)\"", .cacheControl: "no-store",
            ],
            body: body)
    }

    /// Bytes that can be written under `root` before the retention's free-space floor; nil when
    /// the file system cannot be asked.
    static func roomAboveFloor(_ root: String, _ policy: RetentionPolicy) -> Int64? {
        var info = statvfs()
        guard statvfs(root, &info) == 0 else { return nil }
        let size = Int64(info.f_frsize)
        return Int64(info.f_bavail) * size - policy.freeFloor(totalBytes: Int64(info.f_blocks) * size)
    }

    /// 20261123T101500: a file name's time, in UTC.
    static func stamp(_ nanos: Int64) -> String {
        WallTime.date(nanos).formatted(
            Date.VerbatimFormatStyle(
                format: "\(year: .defaultDigits)\(month: .twoDigits)\(day: .twoDigits)T\(hour: .twoDigits(clock: .twentyFourHour, hourCycle: .zeroBased))\(minute: .twoDigits)\(second: .twoDigits)Z",
                timeZone: TimeZone(identifier: "UTC")!, calendar: Calendar(identifier: .gregorian)))
    }
}

/// One clip being joined on its own thread while its file is read for the response, each side
/// driven by the other: the response reads when the join says it has written (every 256 KiB,
/// after each segment, and at its end), and the join waits before its next segment while the
/// file is more than `window` bytes ahead of what the client took. Nothing polls.
final class ClipJoin: Sendable {
    let segments: [RecordingIndex.Entry]
    let root: String
    let range: (from: Int64, to: Int64)
    let output: String
    /// Archived segments downloaded for this clip (removed with it), by their path in the root.
    let elsewhere: [String: String]
    /// How far the file may run ahead of the client before the join waits.
    let window: Int64
    private let io = BlockingIO("vigil.clip")
    /// Reading the growing file: a thread apart from the join's, which may be busy for a while.
    private let reader = BlockingIO("vigil.clip-read")
    private let cancelled = Atomic<Bool>(false)
    /// Set when the join has ended, with its error if it failed.
    private let outcome = Mutex<Result<Void, any Error>?>(nil)
    /// Told by the join when there is more to read (or it ended).
    private let written = Wakeup()
    /// Bytes the client took, and whether the join waits for it to take more (then the file,
    /// which does not grow while the join waits, is `size` long).
    private let flow = Mutex<(sent: Int64, joinWaits: Bool, size: Int64)>((0, false, 0))
    /// Releases the waiting join.
    private let caughtUp = DispatchSemaphore(value: 0)

    init(segments: [RecordingIndex.Entry], root: String, range: (from: Int64, to: Int64), output: String, elsewhere: [String: String] = [:], window: Int64 = 8 << 20) {
        self.elsewhere = elsewhere
        self.segments = segments
        self.root = root
        self.range = range
        self.output = output
        self.window = window
    }

    var partial: String { output + StorageLayout.partialSuffix }

    /// How the join ended; nil while it runs.
    var ended: Result<Void, any Error>? { outcome.withLock { $0 } }

    /// Whether the join is waiting for the client to take what it wrote.
    var isHeldBack: Bool { flow.withLock { $0.joinWaits } }

    func start() {
        io.enqueue { [self] in
            let result = Result<Void, any Error> {
                _ = try SegmentJoiner.export(segments, root: root, from: range.from, to: range.to, output: output, exact: false, elsewhere: elsewhere) { progress in
                    if progress.done > 0 { written.signal() }
                    waitForTheClient()
                    if cancelled.load(ordering: .relaxed) { throw CancellationError() }
                } wrote: { [written] in
                    written.signal()
                }
            }
            outcome.withLock { $0 = result }
            written.signal()
        }
    }

    /// On the join's thread: returns once the file is at most `window` ahead of the client (or
    /// the clip is cancelled).
    private func waitForTheClient() {
        var st = stat()
        guard stat(partial, &st) == 0 else { return }
        let size = Int64(st.st_size)
        let waits = flow.withLock { f -> Bool in
            f.size = size
            f.joinWaits = size - f.sent > window && !cancelled.load(ordering: .relaxed)
            return f.joinWaits
        }
        if waits { caughtUp.wait() }
    }

    /// On the response's side: the client took `count` more bytes.
    private func sent(_ count: Int) {
        let release = flow.withLock { f -> Bool in
            f.sent += Int64(count)
            guard f.joinWaits else { return false }
            f.joinWaits = f.size - f.sent > window
            return !f.joinWaits
        }
        if release { caughtUp.signal() }
    }

    /// Stops the join at its next segment and removes what it wrote, now or once it stops.
    func cancelAndRemove() {
        cancelled.store(true, ordering: .relaxed)
        let release = flow.withLock { f -> Bool in
            defer { f.joinWaits = false }
            return f.joinWaits
        }
        if release { caughtUp.signal() }
        io.enqueue { [output, elsewhere] in
            unlink(output)
            for file in elsewhere.values { unlink(file) }
        }
    }

    /// Sends the file as it grows until the join has ended and all of it is sent.
    func stream(into writer: inout any ResponseBodyWriter) async throws {
        // The join creates the file when it opens its first segment (or fails before).
        var fd: Int32 = -1
        while fd < 0 {
            let ended = ended
            fd = await reader.run { [partial, output] in
                let fd = open(partial, O_RDONLY | O_CLOEXEC)
                return fd >= 0 ? fd : open(output, O_RDONLY | O_CLOEXEC)
            }
            if fd >= 0 { break }
            if case .failure(let error)? = ended { throw error }
            if ended != nil { throw APIError(.internalServerError, "the clip was not written") }
            try Task.checkCancellation()
            await written.wait(untilMonotonic: nil)
        }
        let file = FileDescriptorBox(fd)
        defer { file.close() }
        while true {
            // Whether the join had ended before this read: then an empty read is the end.
            let ended = ended
            let chunk = await reader.run { file.read(ClipRoutes.chunkSize) }
            if let chunk, !chunk.isEmpty {
                try await writer.write(ByteBuffer(bytes: chunk))
                sent(chunk.count)
                continue
            }
            switch ended {
            case .success?: return
            case .failure(let error)?: throw error
            case nil:
                try Task.checkCancellation()
                await written.wait(untilMonotonic: nil)
            }
        }
    }
}

/// A file descriptor read from the reader thread only; the number itself never changes.
final class FileDescriptorBox: Sendable {
    private let fd: Int32
    init(_ fd: Int32) { self.fd = fd }

    /// Up to `count` bytes from where the last read ended; empty at the end, nil on an error.
    func read(_ count: Int) -> [UInt8]? {
        var bytes = [UInt8](repeating: 0, count: count)
        let n = bytes.withUnsafeMutableBytes { Glibc.read(fd, $0.baseAddress, count) }
        guard n >= 0 else { return nil }
        bytes.removeLast(count - n)
        return bytes
    }

    func close() { Glibc.close(fd) }
}
