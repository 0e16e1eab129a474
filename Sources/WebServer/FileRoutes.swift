import S3
import Archive
import Capture
import Foundation
import Glibc
import Hummingbird
import Recorder

/// Files by index id: `GET /api/v1/recordings/{id}/file` (segments, daily timelapse videos),
/// `GET /api/v1/stills/{id}` (timelapse stills, snapshots) and
/// `GET /api/v1/events/{id}/thumbnail.jpg` (a motion event's picture). A URL never holds a path: the id is
/// looked up in the index, and the file it names is served only if its real path (links
/// resolved) is under the storage root. Single byte ranges, ETag, Last-Modified and
/// If-None-Match are honoured, so a browser's `<video>` can seek and cache.
struct FileRoutes: Sendable {
    let recorder: RecorderService.Opened
    /// Where a file no longer kept here is read from (`[archive]`); nil: no archive.
    let archive: ArchiveReader?
    /// Reads the file in chunks on NIO's thread pool, never on the cooperative pool.
    private let fileIO = FileIO()

    init(recorder: RecorderService.Opened, archive: ArchiveReader? = nil) {
        self.recorder = recorder
        self.archive = archive
    }

    func add(to router: Router<WebRequestContext>) {
        let files: [(path: RouterPath, what: String, lookup: Lookup)] = [
            ("/api/v1/recordings/:id/file", "recording", Self.recording(Self.servedKinds)),
            ("/api/v1/stills/:id", "still", Self.recording([.still, .snapshot])),
            ("/api/v1/events/:id/thumbnail.jpg", "motion event picture", { index, id in try index.motionEvent(id: id)?.picture }),
        ]
        for file in files {
            router.get(file.path) { request, context in
                try await serve(request, context, what: file.what, lookup: file.lookup)
            }
            // HEAD: the same headers (download tools and caches ask it first), no bytes read.
            router.head(file.path) { request, context in
                // The length a GET would send (an empty body would say 0).
                try await serve(request, context, what: file.what, lookup: file.lookup).withoutBody()
            }
        }
    }

    /// A file found by id, where it really is on disk, and what a cache needs to know of it.
    struct Found: Sendable {
        let path: String
        let size: Int
        /// nil when the file system gives a time outside `WallTime.range` (no Last-Modified then).
        let modified: Date?
        let contentType: String
        let etag: String
        /// Only the archive's bucket holds it: `path` is then relative to the storage root.
        var archived = false
        /// Another cluster node's file, read from that node's folder of the bucket; nil: this node's.
        var node: String? = nil
        /// A small file's bytes, read through the descriptor its size and tag came from: a
        /// picture replaced while its event runs (a rename) is served whole, old or new.
        var contents: ByteBuffer? = nil
    }

    /// Files up to this size are read at once when found (pictures, stills); larger ones are
    /// streamed by path (recordings, which are never replaced under their name).
    static let readAtOnceBytes = 4 << 20

    /// The path (relative to the root) of the file an id names, read from the index; nil: none.
    typealias Lookup = @Sendable (RecordingIndex, Int64) throws -> String?

    /// The recordings `/api/v1/recordings/{id}/file` serves: videos (stills have their own route).
    static let servedKinds: [RecordingIndex.Kind] = [.segment, .timelapse]

    /// Recordings of these kinds that can be served (not being written, gone or quarantined).
    static func recording(_ kinds: [RecordingIndex.Kind]) -> Lookup {
        { index, id in
            guard let entry = try index.entry(id: id), kinds.contains(entry.kind), ApiRoutes.servedStates.contains(entry.state) else { return nil }
            return entry.path
        }
    }

    private func serve(_ request: Request, _ context: WebRequestContext, what: String, lookup: @escaping Lookup) async throws -> Response {
        guard let id = RequestValues.id(context.parameters.get("id")) else {
            throw APIError(.notFound, "no \(what) with id \(context.parameters.get("id")?.prefix(32) ?? "")")
        }
        return try await serve(request, context, id: id, what: what, lookup: lookup)
    }

    /// The file `lookup` names for `id` (its ETag is made of `id`), as GET or HEAD asks.
    func serve(_ request: Request, _ context: WebRequestContext, id: Int64, what: String, lookup: @escaping Lookup) async throws -> Response {
        try await respond(request, context, try await find(id: id, what: what, lookup: lookup))
    }

    /// Another node's recording (`ClusterRoutes`, catalogue id `id`) from that node's folder of
    /// the bucket, for when the node does not answer; nil when there is no archive or the
    /// bucket does not hold it.
    func serveArchived(_ request: Request, _ context: WebRequestContext, id: Int64, recording: SiteRecording) async throws -> Response? {
        let entry = recording.entry
        // The row is another node's: its path becomes a key in that node's folder only.
        guard let archive, ArchiveSettings.isStoragePath(entry.path), let size = Int(exactly: entry.bytes),
              (try? await archive.exists(path: entry.path, node: recording.node)) == true else { return nil }
        return try await respond(request, context, Found(
            path: entry.path, size: size, modified: nil, contentType: StorageLayout.contentType(entry.path),
            etag: "\"c\(String(id, radix: 16))-\(String(entry.bytes, radix: 16))-a\"", archived: true, node: recording.node))
    }

    /// `found`'s bytes, or a range of them, as GET or HEAD asks.
    private func respond(_ request: Request, _ context: WebRequestContext, _ found: Found) async throws -> Response {
        if found.archived, let archive, archive.settings.redirect, request.method == .get {
            // The browser reads the bucket itself, ranges and all.
            return Response(status: .temporaryRedirect, headers: [.location: await archive.presignedURL(path: found.path, node: found.node), .cacheControl: "no-store"])
        }
        var headers: HTTPFields = [
            .eTag: found.etag, .acceptRanges: "bytes",
            .contentType: found.contentType, .cacheControl: "private, max-age=0, must-revalidate",
        ]
        if let modified = found.modified { headers[.lastModified] = Self.httpDate(modified) }
        if let tags = request.headers[.ifNoneMatch], Self.matches(tags, found.etag) {
            return Response(status: .notModified, headers: headers)
        }
        guard found.size > 0 else {
            headers[.contentLength] = "0"
            return Response(status: .ok, headers: headers)
        }
        if found.archived, let archive {
            return try await Self.passThrough(archive, found, range: ByteRange.parse(request.headers[.range], size: found.size), headers: headers, head: request.method == .head)
        }
        switch ByteRange.parse(request.headers[.range], size: found.size) {
        case .whole:
            headers[.contentLength] = String(found.size)
            let body = if let contents = found.contents { ResponseBody(byteBuffer: contents) } else {
                try await fileIO.loadFile(path: found.path, range: 0...(found.size - 1), context: context)
            }
            return Response(status: .ok, headers: headers, body: body)
        case .part(let range):
            headers[.contentLength] = String(range.count)
            headers[.contentRange] = "bytes \(range.lowerBound)-\(range.upperBound)/\(found.size)"
            let body = if let contents = found.contents, let part = contents.getSlice(at: range.lowerBound, length: range.count) {
                ResponseBody(byteBuffer: part)
            } else {
                try await fileIO.loadFile(path: found.path, range: range, context: context)
            }
            return Response(status: .partialContent, headers: headers, body: body)
        case .unsatisfiable:
            return Response(
                status: .rangeNotSatisfiable, headers: [.contentRange: "bytes */\(found.size)", .contentType: "application/json; charset=utf-8"],
                body: .init(byteBuffer: ByteBuffer(string: #"{"error":"the range is outside the file"}"#)))
        }
    }

    /// The file the index names for `id`, resolved under the storage root; 404 otherwise
    /// (also for a row or a link that points outside the root: nothing out there is served).
    func find(id: Int64, what: String, lookup: @escaping Lookup) async throws(APIError) -> Found {
        let root = recorder.root
        let relative = try await ApiRoutes.reading(recorder.index) { try lookup($0, id) }
        if archive != nil, let relative,
           let item = try await ApiRoutes.reading(recorder.index, { try $0.archiveItem(path: relative) }), item.state == .archived, !item.local {
            // Not kept here any more: served from the bucket, its size as the index knows it.
            return Found(path: relative, size: Int(item.bytes), modified: item.archivedNanos.map(WallTime.date), contentType: StorageLayout.contentType(relative),
                         etag: "\"\(String(id, radix: 16))-\(String(item.bytes, radix: 16))-a\"", archived: true)
        }
        let result: Result<Found, APIError> = await ApiRoutes.io.run {
            guard let relative else {
                return .failure(APIError(.notFound, "no \(what) with id \(id)"))
            }
            guard let path = Self.resolve(relative, under: root) else {
                return .failure(APIError(.notFound, "\(what) \(id) is not a file under the storage root"))
            }
            let fd = open(path, O_RDONLY | O_CLOEXEC | O_NONBLOCK)
            defer { if fd >= 0 { close(fd) } }
            var info = stat()
            guard fd >= 0, fstat(fd, &info) == 0, (info.st_mode & S_IFMT) == S_IFREG else {
                return .failure(APIError(.notFound, "the file of \(what) \(id) is gone"))
            }
            // The modification time is whatever the file system says (2263, 1901): it goes into
            // the tag as it is, with no arithmetic that could overflow.
            let modified = "\(String(info.st_mtim.tv_sec, radix: 16)).\(String(info.st_mtim.tv_nsec, radix: 16))"
            var found = Found(
                path: path, size: Int(info.st_size), modified: WallTime.nanos(info.st_mtim).map(WallTime.date),
                contentType: StorageLayout.contentType(path),
                etag: "\"\(String(id, radix: 16))-\(String(info.st_size, radix: 16))-\(modified)\"")
            if found.size <= Self.readAtOnceBytes {
                guard let bytes = Self.readAll(fd, count: found.size) else {
                    return .failure(APIError(.notFound, "the file of \(what) \(id) cannot be read"))
                }
                found.contents = bytes
            }
            return .success(found)
        }
        return try result.get()
    }

    /// Exactly `count` bytes from the start of `fd`; nil when the file is shorter (it changed
    /// between its fstat and its read) or cannot be read.
    private static func readAll(_ fd: Int32, count: Int) -> ByteBuffer? {
        var buffer = ByteBufferAllocator().buffer(capacity: count)
        var done = 0
        while done < count {
            var n = 0
            buffer.writeWithUnsafeMutableBytes(minimumWritableBytes: count - done) { space in
                n = pread(fd, space.baseAddress, count - done, off_t(done))
                return max(0, n)
            }
            if n < 0, errno == EINTR { continue }
            guard n > 0 else { return nil }
            done += n
        }
        return buffer
    }

    /// An archived file's bytes, or a range of them, streamed from the bucket as they arrive.
    private static func passThrough(_ archive: ArchiveReader, _ found: Found, range: ByteRange, headers: HTTPFields, head: Bool) async throws -> Response {
        var headers = headers
        let wanted: ClosedRange<Int>?
        switch range {
        case .whole: wanted = nil
        case .part(let part): wanted = part
        case .unsatisfiable:
            return Response(
                status: .rangeNotSatisfiable, headers: [.contentRange: "bytes */\(found.size)", .contentType: "application/json; charset=utf-8"],
                body: .init(byteBuffer: ByteBuffer(string: #"{"error":"the range is outside the file"}"#)))
        }
        headers[.contentLength] = String(wanted?.count ?? found.size)
        if let wanted { headers[.contentRange] = "bytes \(wanted.lowerBound)-\(wanted.upperBound)/\(found.size)" }
        let status: HTTPResponse.Status = wanted == nil ? .ok : .partialContent
        // HEAD is answered from the index: no request to the bucket.
        if head { return Response(status: status, headers: headers) }
        let stream: S3ObjectStream
        do {
            stream = try await archive.open(path: found.path, node: found.node, range: wanted.map { Int64($0.lowerBound)...Int64($0.upperBound) })
        } catch {
            throw APIError(.badGateway, "the archive cannot give \(found.path) now: \(error)")
        }
        guard stream.contentLength == Int64(wanted?.count ?? found.size) else {
            throw APIError(.badGateway, "the archive holds \(stream.contentLength) bytes of \(found.path) where \(wanted?.count ?? found.size) were asked for")
        }
        return Response(status: status, headers: headers, body: ResponseBody(asyncSequence: stream.body))
    }

    /// `relative` under `root`, with every link resolved; nil when that lands outside the root.
    static func resolve(_ relative: String, under root: String) -> String? {
        guard let realRoot = realPath(root), let real = realPath(root + "/" + relative) else { return nil }
        return real.hasPrefix(realRoot == "/" ? "/" : realRoot + "/") ? real : nil
    }

    private static func realPath(_ path: String) -> String? {
        guard let resolved = realpath(path, nil) else { return nil }
        defer { free(resolved) }
        return String(cString: resolved)
    }

    /// If-None-Match: a list of tags (weak ones compare by their opaque part), or "*".
    static func matches(_ header: String, _ etag: String) -> Bool {
        header.split(separator: ",").contains { tag in
            let t = tag.trimmingCharacters(in: .whitespaces)
            return t == "*" || t == etag || t == "W/" + etag
        }
    }

    static func httpDate(_ date: Date) -> String {
        date.formatted(Date.VerbatimFormatStyle(
            format: "\(weekday: .abbreviated), \(day: .twoDigits) \(month: .abbreviated) \(year: .defaultDigits) \(hour: .twoDigits(clock: .twentyFourHour, hourCycle: .zeroBased)):\(minute: .twoDigits):\(second: .twoDigits) GMT",
            locale: Locale(identifier: "en_US_POSIX"), timeZone: TimeZone(identifier: "GMT")!, calendar: Calendar(identifier: .gregorian)))
    }
}

/// A `Range: bytes=…` header against a file of `size` bytes (RFC 9110). One range only: a
/// request for several gets the whole file, which the RFC allows.
enum ByteRange: Equatable {
    case whole
    case part(ClosedRange<Int>)
    case unsatisfiable

    static func parse(_ header: String?, size: Int) -> ByteRange {
        guard let header, header.hasPrefix("bytes="), !header.contains(",") else { return .whole }
        let spec = header.dropFirst("bytes=".count).trimmingCharacters(in: .whitespaces)
        let parts = spec.split(separator: "-", maxSplits: 1, omittingEmptySubsequences: false)
        guard parts.count == 2 else { return .whole }
        switch (RequestValues.decimal(parts[0]).map(Int.init), RequestValues.decimal(parts[1]).map(Int.init)) {
        case (let first?, let last?) where first <= last:
            return first < size ? .part(first...min(last, size - 1)) : .unsatisfiable
        case (let first?, nil) where parts[1].isEmpty:
            return first < size ? .part(first...(size - 1)) : .unsatisfiable
        case (nil, let suffix?) where parts[0].isEmpty:
            return suffix > 0 ? .part(max(0, size - suffix)...(size - 1)) : .unsatisfiable
        default:
            // Not a valid range: ignored, as the RFC says.
            return .whole
        }
    }
}
