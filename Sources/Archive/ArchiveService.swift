import CheckedMath
import Plumbing
import S3
import Capture
import Foundation
import Logging
import Metrics
import Recorder
import ServiceLifecycle

/// `[archive]` in `vigil run`: copies every finished recording, still and event picture to the
/// bucket, deletes the local copies `keep_local_days` after, and the bucket's copies after
/// `max_age_days`. The queue is in the index, so nothing is lost to a restart or kill -9; the
/// storage keeper queues each file as it is indexed and wakes this service (nothing is polled).
///
/// A failure of the endpoint (unreachable, slow, 5xx, refused keys, a skewed clock) pauses the
/// whole queue with exponential backoff and full jitter, and is said once when it begins and once
/// when it clears; recording is never affected. A failure of one file (it changed, its checksum
/// differs) starts that file over, at most `maxFileAttempts` times, then once an hour.
public final class ArchiveService: Service, Sendable {
    private let settings: ArchiveSettings
    private let root: String
    private let index: RecordingIndex
    private let storage: StorageKeeper?
    private let client: S3Client
    private let io = BlockingIO("vigil.archive")
    private let wakeup = Wakeup()
    private let logger = Logger(label: "vigil.archive")

    static let maxFileAttempts = 5
    /// A file that failed `maxFileAttempts` times is tried again this long after.
    static let fileRetryNanos: Int64 = 3_600_000_000_000
    /// Local copies and the bucket's old objects are looked at this often (and after each file).
    static let housekeepingNanos: Int64 = 60_000_000_000

    /// `storage`: the running recorder's keeper, which queues each new file and deletes local
    /// copies; nil for `vigil archive sync`, which uploads what the index lists and leaves the disk alone.
    public init(settings: ArchiveSettings, root: String, index: RecordingIndex, storage: StorageKeeper?) {
        self.settings = settings
        self.root = root
        self.storage = storage
        self.index = index
        client = S3Client(endpoint: Self.endpoint(settings), keys: Self.keys(settings), requestTimeout: .seconds(Int64(settings.timeoutSeconds)))
    }

    /// Reads archived files back (the web server, clips), through this service's client.
    public var reader: ArchiveReader { ArchiveReader(settings: settings, client: client) }

    static func endpoint(_ settings: ArchiveSettings) -> S3Endpoint {
        let parts = settings.endpointParts
        return S3Endpoint(scheme: parts.scheme, host: parts.host, port: parts.port, bucket: settings.bucket, region: settings.region, pathStyle: settings.pathStyle)
    }

    static func keys(_ settings: ArchiveSettings) -> S3Keys {
        S3Keys(accessKeyID: settings.credentials.accessKeyID, secretAccessKey: settings.credentials.secretAccessKey, sessionToken: settings.credentials.sessionToken)
    }

    public func run() async throws {
        let stopAsked = Wakeup()
        let ended = await withGracefulShutdownHandler {
            await uploadUntilDrainedOrDue(stopAsked: stopAsked)
        } onGracefulShutdown: { [wakeup] in
            wakeup.stop()
            stopAsked.stop()
        }
        if case .stopped(let failure) = ended { await sayWhatIsLeft(endpointFailure: failure) }
        try? await client.shutdown()
    }

    /// How the uploads of a run ended.
    private enum Ended: Sendable {
        /// The index could not queue files: nothing was archived in this run.
        case noQueue
        /// After the stop, the queue was uploaded until it was empty or the drain's deadline; with
        /// the bucket's failure if it was failing then.
        case stopped(endpointFailure: S3Error?)
        /// `drain_seconds` passed since the stop.
        case drainTimeUp
    }

    /// Uploads until the recorder stops (this service stops only once the storage keeper has
    /// indexed the cameras' last files), then until the queue is empty or `drain_seconds` have
    /// passed, whichever comes first. Uploads still under way then are cancelled, not failed:
    /// their rows stay as they are and the next start resumes them.
    private func uploadUntilDrainedOrDue(stopAsked: Wakeup) async -> Ended {
        await withTaskGroup(of: Ended.self) { group in
            group.addTask { await self.work() }
            group.addTask { [drainSeconds = settings.drainSeconds] in
                await stopAsked.wait(untilMonotonic: nil)
                if !Task.isCancelled && drainSeconds > 0 {
                    // From the stop, not from when the index answered the notice's question.
                    let deadline = ContinuousClock.now + .seconds(drainSeconds)
                    await self.sayDrainBegins()
                    try? await Task.sleep(until: deadline, clock: .continuous)
                }
                return .drainTimeUp
            }
            var ended = Ended.noQueue
            // The first to end cancels the other; the uploads' ending is the one kept.
            for await result in group {
                if case .drainTimeUp = result {} else { ended = result }
                group.cancelAll()
            }
            return ended
        }
    }

    /// Uploads from the start until the stop, then what is still queued (the drain), until the
    /// queue is empty or the drain's deadline cancels this.
    private func work() async -> Ended {
        guard await openQueue() else {
            // Recording goes on without the archive: returning before the stop would end the recorder.
            while !wakeup.isStopped && !Task.isCancelled { await wakeup.wait(untilMonotonic: nil) }
            return .noQueue
        }
        await abortOrphanUploads()
        var pass = Pass(service: self)
        var nextHousekeeping: Int64 = 0
        while !Task.isCancelled {
            let now = SystemClocks.monotonicNanos()
            if !wakeup.isStopped && now >= nextHousekeeping {
                nextHousekeeping = now + Self.housekeepingNanos
                storage?.archived()
                if let maxAge = settings.maxAgeDays { await deleteExpired(maxAgeDays: maxAge) }
            }
            switch await pass.run() {
            case .idle(let until):
                if wakeup.isStopped { return .stopped(endpointFailure: nil) }
                await wakeup.wait(untilMonotonic: min(nextHousekeeping, until ?? .max))
            case .endpointFailed(let delay):
                // Once stopped, the backoff still applies: only the drain's deadline ends the wait.
                if wakeup.isStopped { try? await Task.sleep(for: .nanoseconds(delay)) } else { _ = await wakeup.sleep(nanos: delay) }
            case .uploaded:
                break
            }
        }
        return .stopped(endpointFailure: pass.backoff.failures > 0 ? pass.lastEndpointFailure : nil)
    }

    /// Queues what the index lists and this service has not queued yet; false when the index cannot.
    private func openQueue() async -> Bool {
        let queued: Int
        do {
            if let storage {
                queued = try await storage.startArchiving(keepLocalDays: settings.keepLocalDays) { [wakeup] in wakeup.signal() }
            } else {
                queued = try await io.run { try self.index.enqueueAllForArchive(nowNanos: SystemClocks.wallNanos()) }
            }
        } catch {
            logger.error("archive: the index cannot queue files for \(settings.url) (\(error)); nothing is archived in this run")
            return false
        }
        let backlog: (files: Int, bytes: Int64) = (try? await io.run { try self.index.archiveBacklog() }) ?? (0, 0)
        logger.notice("archive: copying recordings to \(settings.url) at \(settings.endpoint ?? "AWS") (\(backlog.files) file(s), \(backlog.bytes / 1_048_576) MiB waiting\(queued > 0 ? ", \(queued) queued now" : ""))")
        return true
    }

    /// Said when the stop makes the operator wait for uploads, so the wait is not a mystery.
    private func sayDrainBegins() async {
        guard let backlog = try? await io.run({ try self.index.archiveBacklog() }), backlog.files > 0 else { return }
        logger.notice("archive: stopping: uploading the \(backlog.files) file(s) still queued before exiting (at most drain_seconds = \(settings.drainSeconds) s)")
    }

    /// What the stop leaves only on this disk, by count and by the first and last names, so that
    /// a disk lost before the next start is a known loss; the next start uploads them first (the
    /// queue goes oldest first).
    private func sayWhatIsLeft(endpointFailure: S3Error?) async {
        do {
            let (backlog, ends) = try await io.run { (try self.index.archiveBacklog(), try self.index.archiveQueueEnds()) }
            guard backlog.files > 0, let ends else {
                logger.notice("archive: stopped with every finished file in \(settings.url): nothing is left only on this disk")
                return
            }
            let why = settings.drainSeconds == 0
                ? "drain_seconds = 0: the stop does not wait for uploads"
                : "not uploaded within drain_seconds = \(settings.drainSeconds) s of the stop" + (endpointFailure.map { "; the bucket fails: \($0)" } ?? "")
            logger.warning("""
                archive: \(backlog.files) file(s) (\(RecordingsListing.size(backlog.bytes))) are left only on this disk (\(why)): \
                oldest \(ends.oldest), newest \(ends.newest); the next start uploads them first
                """)
        } catch {
            logger.error("archive: the index cannot say what is left to upload: \(error)")
        }
    }

    /// `vigil archive sync`: queues every finished file, uploads until the queue is empty (files
    /// that keep failing on their own are left for later) and returns what it did. An endpoint
    /// that fails `giveUpAfter` times in a row ends it with that error.
    public func sync(giveUpAfter: Int = 6, progress: @Sendable (_ files: Int, _ bytes: Int64) -> Void = { _, _ in }) async throws -> (files: Int, bytes: Int64, left: Int) {
        _ = try await io.run { try self.index.enqueueAllForArchive(nowNanos: SystemClocks.wallNanos()) }
        await abortOrphanUploads()
        var pass = Pass(service: self)
        while true {
            switch await pass.run() {
            case .idle:
                let left = try await io.run { try self.index.archiveBacklog() }.files
                return (pass.files, pass.bytes, left)
            case .endpointFailed(let delay):
                if pass.backoff.failures >= giveUpAfter, let error = pass.lastEndpointFailure { throw error }
                try await Task.sleep(for: .nanoseconds(delay))
            case .uploaded:
                progress(pass.files, pass.bytes)
            }
        }
    }

    /// `vigil archive rebuild-index`: the index gets back every archived file the bucket holds.
    public func rebuildIndex(progress: @Sendable (_ listed: Int) -> Void = { _ in }) async throws -> ArchiveRebuild.Summary {
        try await ArchiveRebuild(client: client, settings: settings, index: index, root: root, io: io).run(progress: progress)
    }

    /// `vigil archive adopt`: files archived before the node joined a cluster, into its folder.
    public func adopt(progress: @Sendable (_ done: Int, _ total: Int) -> Void = { _, _ in }) async throws -> ArchiveAdopt.Summary {
        try await ArchiveAdopt(client: client, settings: settings, index: index, io: io).run(progress: progress)
    }

    /// Closes the connections (commands that used the service without running it).
    public func close() async { try? await client.shutdown() }

    /// One look at the queue and an upload of what it holds, with what is remembered between
    /// looks: the backoff, and files that failed on their own and wait.
    private struct Pass {
        let service: ArchiveService
        let upload: ArchiveUpload
        var backoff: ArchiveBackoff
        var deferred: [String: Int64] = [:]
        var lastEndpointFailure: S3Error?
        private(set) var files = 0
        private(set) var bytes: Int64 = 0

        enum Result {
            /// Nothing to upload until `until` (monotonic; nil: until woken).
            case idle(until: Int64?)
            case endpointFailed(delayNanos: Int64)
            case uploaded
        }

        init(service: ArchiveService) {
            self.service = service
            let settings = service.settings
            upload = ArchiveUpload(client: service.client, settings: settings, index: service.index, root: service.root,
                                   reader: ArchiveFileReader(io: service.io), rate: settings.uploadBytesPerSecond.map(UploadRate.init(bytesPerSecond:)))
            backoff = ArchiveBackoff(logger: service.logger, target: "\(settings.url) at \(settings.endpoint ?? "AWS")")
        }

        mutating func run() async -> Result {
            let now = SystemClocks.monotonicNanos()
            deferred = deferred.filter { $0.value > now }
            let items: [RecordingIndex.ArchiveItem]
            do {
                let index = service.index
                items = try await service.io.run { try index.archiveQueue(limit: 64) }.filter { deferred[$0.path] == nil }
            } catch {
                service.logger.error("archive: the queue cannot be read from the index: \(error)")
                return .idle(until: now + ArchiveService.housekeepingNanos)
            }
            if items.isEmpty { return .idle(until: deferred.values.min()) }
            var endpointFailure: S3Error?
            // While the endpoint fails, one file at a time probes it.
            let width = backoff.failures > 0 ? 1 : service.settings.concurrency
            let batches = stride(from: 0, to: items.count, by: width).map { Array(items[$0..<min($0 + width, items.count)]) }
            for batch in backoff.failures > 0 ? Array(batches.prefix(1)) : batches {
                let upload = self.upload
                let results = await withTaskGroup(of: (RecordingIndex.ArchiveItem, Swift.Result<ArchiveUpload.Outcome, any Error>).self) { group in
                    for item in batch {
                        group.addTask {
                            do { return (item, .success(try await upload.run(item))) } catch { return (item, .failure(error)) }
                        }
                    }
                    return await group.reduce(into: []) { $0.append($1) }
                }
                for (item, result) in results {
                    switch result {
                    case .success(.archived(let size)):
                        Counter(label: "vigil_archive_uploaded_bytes_total").increment(by: size)
                        service.logger.debug("archive: \(item.path) is in \(service.settings.url) (\(size) bytes)")
                        service.storage?.archived()
                        files += 1
                        bytes = bytes.saturatingAdding(size)
                    case .success(.vanished):
                        service.logger.notice("archive: \(item.path) was deleted before it was uploaded; it leaves the queue")
                    case .failure where Task.isCancelled:
                        // Cut short by the drain's deadline, the fault of neither the file nor the
                        // bucket: its row stays as it is, and the next start resumes it.
                        break
                    case .failure(let error as S3Error) where error.reason.isEndpointWide:
                        Counter(label: "vigil_archive_failures_total", dimensions: [("reason", error.reason.rawValue)]).increment()
                        endpointFailure = endpointFailure ?? error
                    case .failure(let error):
                        let reason = (error as? S3Error)?.reason.rawValue ?? (error is ArchiveFileReader.ReadError ? "local" : "checksum")
                        Counter(label: "vigil_archive_failures_total", dimensions: [("reason", reason)]).increment()
                        await service.fileFailed(item, error, deferred: &deferred)
                    }
                }
                // A stop does not end a pass: the files after the stop are uploaded too (the drain).
                if endpointFailure != nil || Task.isCancelled { break }
            }
            if let failure = endpointFailure {
                lastEndpointFailure = failure
                return .endpointFailed(delayNanos: backoff.failed(failure))
            }
            // A pass the drain's deadline cut short says nothing of the bucket: not "answers again".
            if !Task.isCancelled { backoff.succeeded() }
            return .uploaded
        }
    }

    /// One file failed on its own: noted in the index, started over; after `maxFileAttempts`
    /// it waits an hour so it does not hold the others up.
    fileprivate func fileFailed(_ item: RecordingIndex.ArchiveItem, _ error: any Error, deferred: inout [String: Int64]) async {
        let message = "\(error)"
        let attempts = item.attempts + 1
        do {
            try await io.run {
                try self.index.recordArchiveFailure(path: item.path, message: message)
                try self.index.restartUpload(path: item.path)
            }
        } catch {
            logger.error("archive: the index cannot note a failure of \(item.path): \(error)")
        }
        if attempts >= Self.maxFileAttempts {
            deferred[item.path] = SystemClocks.monotonicNanos() + Self.fileRetryNanos
            logger.error("archive: \(item.path) failed \(attempts) times (\(message)); tried again in an hour, the other files go on")
        } else {
            deferred[item.path] = SystemClocks.monotonicNanos() + Int64(attempts) * 2_000_000_000
            logger.warning("archive: \(item.path): \(message); sent again from the start")
        }
    }

    /// Multipart uploads under the prefix that the index does not know (killed between creating
    /// one and keeping its id) are aborted, so the bucket does not keep their parts.
    private func abortOrphanUploads() async {
        do {
            let known = Set(try await io.run { try self.index.archiveUploadIDs() })
            // By the prefix without its slash, as `ArchiveRebuild` lists (moto refuses a "/" there).
            for upload in try await client.listMultipartUploads(prefix: settings.prefix)
            where !known.contains(upload.uploadID) && settings.path(for: upload.key) != nil {
                try await client.abortMultipartUpload(key: upload.key, uploadID: upload.uploadID)
                logger.notice("archive: aborted an unfinished upload of \(upload.key) that no queued file owns")
            }
        } catch {
            logger.debug("archive: unfinished uploads could not be listed now: \(error)")
        }
    }

    /// `max_age_days`: the bucket's copies of recordings that ended longer ago are deleted, and
    /// with them the entry when no local copy is left.
    private func deleteExpired(maxAgeDays: Double) async {
        let (cutoff, overflow) = SystemClocks.wallNanos().subtractingReportingOverflow(Int64(min(maxAgeDays, 36_500) * 86_400) * 1_000_000_000)
        guard !overflow else { return }
        do {
            let expired = try await io.run { try self.index.archivedEnding(before: cutoff, limit: 500) }
            guard !expired.isEmpty else { return }
            for entry in expired {
                try await client.deleteObject(key: settings.key(for: entry.path))
                // Archived before this node joined a cluster: under the key of then.
                if let before = settings.keyBeforeCluster(for: entry.path) { try await client.deleteObject(key: before) }
                try await io.run {
                    if entry.location == .archive { try self.index.remove(path: entry.path) }
                    try self.index.removeFromArchive(path: entry.path)
                }
            }
            logger.notice("archive: deleted \(expired.count) recording(s) older than \(DeviceFormat.rate(maxAgeDays)) days from \(settings.url) (max_age_days)")
        } catch {
            logger.warning("archive: old recordings could not be deleted from \(settings.url) now: \(error)")
        }
    }
}

extension S3FailureReason {
    /// The endpoint or the account is at fault, not one file: the whole queue waits.
    var isEndpointWide: Bool {
        switch self {
        case .network, .timeout, .server, .throttled, .auth, .clock, .config: return true
        case .checksum, .local: return false
        }
    }
}
