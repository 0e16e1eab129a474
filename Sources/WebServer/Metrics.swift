import Capture
import Foundation
import Hummingbird
import Metrics
import Plumbing
import Prometheus
import Recorder
import ServiceLifecycle
import Synchronization

/// The recorder's figures for Prometheus (`GET /metrics`), through swift-metrics: counters fed
/// from the recorder's events as they happen, gauges read from the supervisor's status when
/// scraped. The `vigil` executable bootstraps the metrics system with a Prometheus factory and
/// hands its registry here; without one, `/metrics` is not served.
///
/// | metric | from |
/// |---|---|
/// | `vigil_frames_captured_total{camera}` | status (frames), at each scrape |
/// | `vigil_frames_dropped_total{camera,reason}` | `frames_dropped` events; reason: the output that fell behind |
/// | `vigil_frames_encoded_total{camera}` | frames of each finalized segment |
/// | `vigil_segments_total{camera}`, `vigil_segment_bytes_total{camera}` | finalized segments |
/// | `vigil_motion_events_total{camera}` | `motion_start` events |
/// | `vigil_camera_up{camera}` | 1 while recording |
/// | `vigil_camera_reconnects_total{camera,reason}` | `camera_lost` events: unplugged, stalled, interrupted |
/// | `vigil_last_frame_age_seconds{camera}` | status |
/// | `vigil_storage_free_bytes` | the storage root's file system |
/// | `vigil_live_clients` | `Places` of live view (a viewer holds one while it streams) |
/// | `vigil_http_requests_total{code}` | every answered request |
/// | `vigil_archive_queue_files`, `vigil_archive_queue_bytes` | the archive's queue in the index, at each scrape |
/// | `vigil_archive_uploaded_bytes_total`, `vigil_archive_failures_total{reason}` | counted by `ArchiveService` |
final class RecorderMetrics: Service, Sendable {
    let registry: PrometheusCollectorRegistry
    private let recorder: RecorderService.Opened
    private let stream: AsyncStream<RecorderEvent>
    /// Frames of each camera counted so far (the captured counter only goes up by differences).
    private let framesCounted = Mutex<[String: Int]>([:])
    /// `[archive]` is on: the queue's gauges are read from the index.
    private let archiving: Bool

    /// Subscribes to the recorder's events at once, so the first segment is counted.
    init(registry: PrometheusCollectorRegistry, recorder: RecorderService.Opened, archiving: Bool = false) {
        self.registry = registry
        self.recorder = recorder
        self.archiving = archiving
        stream = recorder.events.stream()
    }

    func run() async {
        for await event in stream.cancelOnGracefulShutdown() { count(event) }
    }

    func count(_ event: RecorderEvent) {
        switch event {
        case .segmentFinalized(let camera, let info):
            Counter(label: "vigil_segments_total", dimensions: [("camera", camera)]).increment()
            Counter(label: "vigil_segment_bytes_total", dimensions: [("camera", camera)]).increment(by: info.byteCount)
            Counter(label: "vigil_frames_encoded_total", dimensions: [("camera", camera)]).increment(by: info.frameCount)
        case .framesDropped(let camera, let output, let n):
            Counter(label: "vigil_frames_dropped_total", dimensions: [("camera", camera), ("reason", output)]).increment(by: n)
        case .motionStarted(let camera, _):
            Counter(label: "vigil_motion_events_total", dimensions: [("camera", camera)]).increment()
        case .cameraLost(let camera, let cause, _):
            Counter(label: "vigil_camera_reconnects_total", dimensions: [("camera", camera), ("reason", cause.rawValue)]).increment()
        default: break
        }
    }

    /// Brings the gauges and the captured-frames counter up to date, then writes every metric.
    func scrape() async -> [UInt8] {
        let now = SystemClocks.monotonicNanos()
        for s in await recorder.supervisor.status() {
            let camera = [("camera", s.cameraID)]
            Gauge(label: "vigil_camera_up", dimensions: camera).record(s.state == .recording ? 1 : 0)
            if let last = s.lastFrameMonotonicNanos {
                Gauge(label: "vigil_last_frame_age_seconds", dimensions: camera).record(Double(max(0, now - last)) / 1e9)
            }
            let added = framesCounted.withLock { counted -> Int in
                // A camera removed and added again starts from 0.
                let before = counted[s.cameraID].map { $0 <= s.frames ? $0 : 0 } ?? 0
                counted[s.cameraID] = s.frames
                return s.frames - before
            }
            Counter(label: "vigil_frames_captured_total", dimensions: camera).increment(by: added)
        }
        let root = recorder.root
        if let free = await ApiRoutes.io.run({ Self.freeBytes(root) }) {
            Gauge(label: "vigil_storage_free_bytes").record(free)
        }
        if archiving, let backlog = try? await ApiRoutes.io.run({ [recorder] in try recorder.index.archiveBacklog() }) {
            Gauge(label: "vigil_archive_queue_files").record(backlog.files)
            Gauge(label: "vigil_archive_queue_bytes").record(backlog.bytes)
            // Present from the first scrape, before anything was uploaded or failed.
            Counter(label: "vigil_archive_uploaded_bytes_total").increment(by: 0)
        }
        var buffer: [UInt8] = []
        registry.emit(into: &buffer)
        return buffer
    }

    private static func freeBytes(_ path: String) -> Int64? {
        var info = statvfs()
        guard statvfs(path, &info) == 0 else { return nil }
        return Int64(info.f_bavail) * Int64(info.f_frsize)
    }

    func add(to router: Router<WebRequestContext>) {
        router.get("/metrics") { _, _ in
            let text = await self.scrape()
            return Response(
                status: .ok, headers: [.contentType: "text/plain; version=0.0.4; charset=utf-8", .cacheControl: "no-store"],
                body: .init(byteBuffer: ByteBuffer(bytes: text)))
        }
    }
}

/// Counts answered requests by status code (`vigil_http_requests_total{code}`), errors included.
struct RequestCountingMiddleware<Context: RequestContext>: RouterMiddleware {
    func handle(_ request: Request, context: Context, next: (Request, Context) async throws -> Response) async throws -> Response {
        do {
            let response = try await next(request, context)
            Self.count(response.status)
            return response
        } catch let error as any HTTPResponseError {
            Self.count(error.status)
            throw error
        } catch {
            Self.count(.internalServerError)
            throw error
        }
    }

    private static func count(_ status: HTTPResponse.Status) {
        Counter(label: "vigil_http_requests_total", dimensions: [("code", String(status.code))]).increment()
    }
}
