import Capture
import CaptureTesting
import Foundation
import Plumbing
import Recorder
import Synchronization

/// Replugs an emulated USB camera `replugs` times under a supervisor and measures, for each,
/// the time from the node reappearing to the first frame reaching an output again.
func reattachBenchmark(replugs: Int) async throws {
    let devices = try TemporaryDirectory("vigil-bench-dev")
    let storage = try TemporaryDirectory("vigil-bench-rec")
    defer { devices.remove(); storage.remove() }
    let camera = EmulatedCamera()
    let hotplug = EmulatedHotplug(kernel: EmulatedV4L2([camera]), deviceDirectory: devices.path)
    hotplug.plug(camera, as: "video0")

    // The first frame after a replug signals the waiting benchmark.
    let armed = Flag()
    let firstFrame = DispatchSemaphore(value: 0)
    let frames = FrameOutput(name: "probe") { _ in
        if armed.take() { firstFrame.signal() }
    }
    let movie = try SegmentedMovieOutput(.init(storageRoot: storage.path, segmentSeconds: 60, encoding: .streamCopy))
    let events = RecorderEvents()
    let lost = DispatchSemaphore(value: 0)
    let stream = events.stream()
    let listener = Task.detached { for await e in stream { if case .cameraLost = e { lost.signal() } } }
    let supervisor = Supervisor(
        plans: [CameraPlan(cameraID: "v4l2:\(camera.stableName!)", format: .size(width: 640, height: 480, pixelFormat: .mjpeg),
                           frameRate: 30, outputs: [(movie, .init()), (frames, .init())])],
        source: hotplug.source(), events: events)
    let run = Task.detached { await supervisor.run() }
    // The measuring loop waits on semaphores: it runs on its own thread, never on the pool the
    // supervisor needs.
    let measured: Result<[Double], Error> = await withCheckedContinuation { continuation in
        Thread.detachNewThread {
            continuation.resume(returning: Result { try replugLoop(replugs, hotplug, camera, armed, firstFrame, lost) })
        }
    }
    run.cancel()
    await run.value
    listener.cancel()
    let sorted = try measured.get().sorted()
    print("replugs: \(replugs) (emulated USB camera, 640x480 MJPEG at 30 fps, node renumbered every other time)")
    print("from the node reappearing to the first frame at an output; a camera's first frame alone takes one frame interval (33 ms)")
    print(String(format: "median: %.3f s", sorted[sorted.count / 2]))
    print(String(format: "max: %.3f s", sorted.last!))
}

private func replugLoop(
    _ replugs: Int, _ hotplug: EmulatedHotplug, _ camera: EmulatedCamera, _ armed: Flag,
    _ firstFrame: DispatchSemaphore, _ lost: DispatchSemaphore
) throws -> [Double] {
    armed.raise()
    guard firstFrame.wait(timeout: .now() + 10) == .success else { throw BenchmarkError("the camera never started") }
    var latencies: [Double] = []
    for i in 0..<replugs {
        Thread.sleep(forTimeInterval: 0.5)
        hotplug.unplug(camera)
        guard lost.wait(timeout: .now() + 10) == .success else { throw BenchmarkError("unplug \(i + 1) was not noticed") }
        Thread.sleep(forTimeInterval: 0.3)
        armed.raise()
        let start = SystemClocks.monotonicNanos()
        hotplug.plug(camera, as: i % 2 == 0 ? "video1" : "video0")
        guard firstFrame.wait(timeout: .now() + 10) == .success else { throw BenchmarkError("replug \(i + 1): no frame within 10 s") }
        latencies.append(Double(SystemClocks.monotonicNanos() - start) / 1e9)
    }
    return latencies
}

/// Raised by the benchmark, taken (once) by the first frame after it.
final class Flag: Sendable {
    private let value = Atomic<Bool>(false)
    func raise() { value.store(true, ordering: .releasing) }
    func take() -> Bool { value.compareExchange(expected: true, desired: false, ordering: .acquiringAndReleasing).exchanged }
}

struct BenchmarkError: Error, CustomStringConvertible {
    let description: String
    init(_ d: String) { description = d }
}
