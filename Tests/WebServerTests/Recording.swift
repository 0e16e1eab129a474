import Capture
import CaptureTesting
import Foundation
import Hummingbird
import HummingbirdTesting
import Metrics
import Prometheus
@testable import Recorder
import Testing
@testable import WebServer

/// A synthetic camera (160x120, 15 fps) recording 1 s H.264 segments and a still every second
/// into a temporary storage root, indexed in a real SQLite file: what the web server reads.
final class Recording: Sendable {
    let dir: TemporaryDirectory
    let keeper: StorageKeeper
    let supervisor: Supervisor
    let events: RecorderEvents
    /// The camera's live view, as the recorder makes one for every camera.
    let liveFeeds: LiveFeeds
    private let run: Task<Void, Never>

    static let camera = "synthetic-0"

    private init(dir: TemporaryDirectory, keeper: StorageKeeper, supervisor: Supervisor, events: RecorderEvents, liveFeeds: LiveFeeds, run: Task<Void, Never>) {
        self.liveFeeds = liveFeeds
        self.dir = dir
        self.keeper = keeper
        self.supervisor = supervisor
        self.events = events
        self.run = run
    }

    /// Starts recording; returns once `segments` segments are finalized and indexed (0: once
    /// the first segment has started).
    static func start(segments: Int) async throws -> Recording {
        let dir = try TemporaryDirectory("vigil-web")
        let events = RecorderEvents()
        let keeper = try StorageKeeper.open(root: dir.path, policy: RetentionPolicy(), events: events)
        keeper.start()
        let movie = try SegmentedMovieOutput(.init(storageRoot: dir.path, segmentSeconds: 1, dropsLateFrames: false))
        let stills = try TimelapseOutput(.init(storageRoot: dir.path, intervalSeconds: 1))
        let live = LiveOutput()
        movie.shareEncodedPackets(with: live.mp4)
        let liveFeeds = LiveFeeds()
        liveFeeds.replace(with: [camera: live])
        let supervisor = Supervisor(
            plans: [CameraPlan(cameraID: camera, format: .size(width: 160, height: 120, pixelFormat: .yuyv422), frameRate: 15,
                               outputs: [(movie, .init()), (stills, .init()), (live, .init())])],
            source: SyntheticDeviceSource(count: 1), events: events)
        let stream = events.stream()
        let run = Task.detached { await supervisor.run() }
        let recording = Recording(dir: dir, keeper: keeper, supervisor: supervisor, events: events, liveFeeds: liveFeeds, run: run)
        var finalized = 0
        for await event in stream {
            if case .segmentFinalized = event { finalized += 1 }
            if case .segmentStarted = event, segments == 0 { break }
            if finalized >= segments && segments > 0 { break }
        }
        // The index takes events from its own stream: wait until it holds what was announced
        // (with no segment finished yet, the one being written).
        let indexed = try await waitUntil(seconds: 30) {
            try keeper.index.entries(kind: .segment, states: [.complete]).count >= finalized
                && (segments > 0 || !keeper.index.entries(kind: .segment, states: [.writing, .complete]).isEmpty)
        }
        try #require(indexed, "the index never held the \(finalized) segment(s) announced")
        return recording
    }

    /// Stops the camera (its open segment is finalized) and the index.
    func stop() async {
        run.cancel()
        await run.value
        await keeper.stop()
    }

    /// Runs `body`, then stops the camera whether it threw or not: a failed check must not leave
    /// a camera recording into a folder that is about to be removed.
    func stopping<T>(after body: () async throws -> T) async throws -> T {
        do {
            let value = try await body()
            await stop()
            return value
        } catch {
            await stop()
            throw error
        }
    }

    func remove() { dir.remove() }

    func opened(_ configuration: Configuration = .builtInDefault()) -> RecorderService.Opened {
        RecorderService.Opened(configuration: configuration, root: dir.path, supervisor: supervisor, index: keeper.index, events: events, liveFeeds: liveFeeds)
    }

    /// The server over this recording, with `http` settings (default: loopback, no token).
    func server(_ http: HTTPSettings = HTTPSettings(), metrics: PrometheusCollectorRegistry? = nil, site: (any SiteCatalog)? = nil) -> WebServer {
        var configuration = Configuration.builtInDefault(storageRoot: dir.path)
        configuration.http = http
        return WebServer(settings: http, recorder: opened(configuration), metrics: metrics, site: site)
    }

    /// Returns once `count` more segments are finalized.
    func waitForSegments(_ count: Int) async {
        var finalized = 0
        for await event in events.stream() {
            if case .segmentFinalized = event { finalized += 1 }
            if finalized >= count { return }
        }
    }
}

extension TestResponse {
    /// The `error` of a JSON error body; nil when the body is not one.
    var errorMessage: String? {
        json()["error"] as? String
    }

    /// The body as a JSON object; empty when it is not one.
    func json() -> [String: Any] {
        ((try? JSONSerialization.jsonObject(with: Data(body.readableBytesView))) as? [String: Any]) ?? [:]
    }
}

/// The registry swift-metrics reports to in this test process (bootstrapped once, as `vigil` does).
let metricsRegistry: PrometheusCollectorRegistry = {
    let registry = PrometheusCollectorRegistry()
    MetricsSystem.bootstrap(PrometheusMetricsFactory(registry: registry))
    return registry
}()
