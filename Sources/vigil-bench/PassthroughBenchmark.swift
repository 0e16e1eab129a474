import Capture
import CaptureTesting
import Foundation
import Glibc
import Media
import Plumbing

/// Measures what MJPEG passthrough from a V4L2 camera costs Vigil: an emulated 1920x1080 MJPEG
/// camera at 30 fps is recorded by stream copy into MKV segments plus a timelapse still, and
/// the process's CPU time is split into the emulator's own (producing frames) and Vigil's.
/// With `rawTimelapse`, a 1280x720 YUYV camera at 30 fps only takes a still every 10 s: what
/// capture itself costs between stills (each frame dequeued, fanned out and requeued).
func passthroughBenchmark(seconds: Double, cameraCount: Int, rawTimelapse: Bool = false) throws {

let output = FileManager.default.temporaryDirectory.appendingPathComponent("vigil-bench-\(getpid())").path
defer { try? FileManager.default.removeItem(atPath: output) }

let emulated = (0..<cameraCount).map { i -> EmulatedCamera in
    // A USB 3 camera's raw 720p at 30 fps, for the raw case.
    let formats = EmulatedCamera.typicalFormats.filter { $0.pixelFormat != .yuyv422 }
        + [EmulatedCamera.Format(.yuyv422, sizes: [(640, 480), (1280, 720)], frameRates: [30])]
    let c = EmulatedCamera(node: "/dev/video\(i * 2)", stableName: "usb-Bench_Camera_SN\(i)-video-index0", formats: formats)
    c.precomputedFrames = 10
    return c
}
let rssBeforeCameras = memoryStatus("VmRSS")
let kernel = EmulatedV4L2(emulated)
let (sessions, movies) = try startPassthroughSessions(kernel, output: output, rawTimelapse: rawTimelapse)

// Warm up: the emulator encodes its frames once; measure only once frames flow at full rate.
while sessions.map(\.capturedFrameCount).min()! < 60 { Thread.sleep(forTimeInterval: 0.1) }
Thread.sleep(forTimeInterval: 1)
let cpu0 = processCPU(), emu0 = kernel.productionCPUNanos, frames0 = sessions.map(\.capturedFrameCount).reduce(0, +)
let wall0 = SystemClocks.monotonicNanos()
Thread.sleep(forTimeInterval: seconds)
let cpu1 = processCPU(), emu1 = kernel.productionCPUNanos, frames1 = sessions.map(\.capturedFrameCount).reduce(0, +)
let wall1 = SystemClocks.monotonicNanos()
let peakRSS = memoryStatus("VmHWM")
for s in sessions { s.stopRunning() }

let elapsed = Double(wall1 - wall0) / 1e9
let user = Double(cpu1.user - cpu0.user) / 1e9
let system = Double(cpu1.system - cpu0.system) / 1e9
let total = user + system
let emulator = Double(emu1 - emu0) / 1e9
let vigil = total - emulator
let frames = frames1 - frames0
let perCameraMinute = vigil / Double(cameraCount) / (elapsed / 60)
let bytes = RecordingInspector.files(under: output, endingWith: ".mkv").reduce(Int64(0)) {
    $0 + ((try? FileManager.default.attributesOfItem(atPath: $1)[.size] as? Int64) ?? 0)
}
let floorCPU = diskWriteFloorCPU(bytes: bytes, frames: frames1, output: output)

print(rawTimelapse
    ? "cameras: \(cameraCount) x 1280x720 YUYV @ 30 fps, a still every 10 s (nothing else)"
    : "cameras: \(cameraCount) x 1920x1080 MJPEG @ 30 fps, stream copy to MKV + a still every 10 s")
print(String(format: "measured: %.1f s, %d frames (%.1f fps per camera), %d dropped", elapsed, frames, Double(frames) / elapsed / Double(cameraCount), movies.map(\.droppedFrameCount).reduce(0, +)))
print(String(format: "bytes recorded: %lld (%.0f KiB per frame)", bytes, Double(bytes) / 1024 / Double(max(1, frames1))))
print(String(format: "process CPU: %.3f s (user %.3f s, system %.3f s), emulator's own: %.3f s, Vigil: %.3f s", total, user, system, emulator, vigil))
print(String(format: "Vigil CPU per camera: %.3f s per camera-minute = %.2f %% of one core", perCameraMinute, perCameraMinute / 60 * 100))
// Memory: the peak beyond the process before any camera. The emulator's share is in it (its
// precomputed JPEGs, the YUYV picture and JPEG encoder it made them with, its V4L2 buffers:
// about 40 MiB per camera, measured with a session that only takes frames), so Vigil's own is
// what this adds to that.
let perCamera = Double(peakRSS - rssBeforeCameras) / Double(cameraCount) / 1_048_576
print(String(format: "peak RSS: %.1f MiB (%.1f MiB before the cameras); per camera, the emulator's own memory included: %.1f MiB", Double(peakRSS) / 1_048_576, Double(rssBeforeCameras) / 1_048_576, perCamera))
print(String(format: "writing the same bytes with plain write(): %.3f s (the disk's cost, paid by any recorder)", floorCPU))
let beyond = (vigil - floorCPU) / Double(cameraCount) / (elapsed / 60)
print(String(format: "Vigil beyond the disk write: %.3f s per camera-minute = %.2f %% of one core", beyond, beyond / 60 * 100))
}

/// One session per emulated camera: MJPEG 1080p copied into MKV with a still every 10 s, or
/// (`rawTimelapse`) YUYV 720p with only the still.
private func startPassthroughSessions(_ kernel: EmulatedV4L2, output: String, rawTimelapse: Bool) throws -> ([CaptureSession], [SegmentedMovieOutput]) {
    let devices = V4L2Discovery(system: kernel).devices()
    var sessions: [CaptureSession] = []
    var movies: [SegmentedMovieOutput] = []
    for device in devices {
        let session = CaptureSession()
        let movie = try SegmentedMovieOutput(.init(storageRoot: output, segmentSeconds: 60, encoding: .streamCopy))
        let stills = try TimelapseOutput(.init(storageRoot: output, intervalSeconds: 10))
        session.beginConfiguration()
        try session.addInput(device)
        if rawTimelapse {
            try session.setFormat(.size(width: 1280, height: 720, pixelFormat: .yuyv422))
        } else {
            try session.setFormat(.size(width: 1920, height: 1080, pixelFormat: .mjpeg))
        }
        try session.setFrameRate(30)
        if !rawTimelapse { try session.addOutput(movie) }
        try session.addOutput(stills)
        try session.commitConfiguration()
        try session.startRunning()
        sessions.append(session)
        movies.append(movie)
    }
    return (sessions, movies)
}

/// The floor: what the kernel charges any recorder for putting the same bytes on disk,
/// measured by writing them with plain write() calls of one frame each; CPU seconds.
private func diskWriteFloorCPU(bytes: Int64, frames: Int, output: String) -> Double {
    let chunk = max(1, Int(bytes) / max(1, frames))
    let floorPath = "\(output)/floor.bin"
    let floorFD = open(floorPath, O_WRONLY | O_CREAT | O_TRUNC, 0o644)
    let block = UnsafeMutableRawBufferPointer.allocate(byteCount: chunk, alignment: 64)
    block.initializeMemory(as: UInt8.self, repeating: 0x5A)
    let floor0 = processCPU()
    var written: Int64 = 0
    while written < bytes {
        let n = write(floorFD, block.baseAddress!, chunk)
        guard n > 0 else { break }
        written += Int64(n)
    }
    close(floorFD)
    let floor1 = processCPU()
    block.deallocate()
    return Double(floor1.user - floor0.user + floor1.system - floor0.system) / 1e9
}

/// (user, system) CPU time of this process in nanoseconds.
func processCPU() -> (user: Int64, system: Int64) {
    var usage = rusage()
    getrusage(RUSAGE_SELF.rawValue, &usage)
    let user = Int64(usage.ru_utime.tv_sec) * 1_000_000_000 + Int64(usage.ru_utime.tv_usec) * 1000
    let system = Int64(usage.ru_stime.tv_sec) * 1_000_000_000 + Int64(usage.ru_stime.tv_usec) * 1000
    return (user, system)
}

/// A `/proc/self/status` memory line (VmRSS, VmHWM) in bytes.
func memoryStatus(_ key: String) -> Int64 {
    let status = (try? String(contentsOfFile: "/proc/self/status", encoding: .utf8)) ?? ""
    guard let line = status.split(separator: "\n").first(where: { $0.hasPrefix(key + ":") }) else { return 0 }
    return (Int64(line.split(separator: " ").dropFirst().first.map(String.init) ?? "") ?? 0) * 1024
}
