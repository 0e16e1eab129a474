import Foundation
import Media
import Recorder

// Benchmarks (the first two need the emulated V4L2 device):
//   vigil-bench passthrough [SECONDS=60] [CAMERAS=1] [yuyv]   (Scripts/bench-v4l2)
//   vigil-bench reattach [REPLUGS=25]                   (Scripts/bench-reattach)
//   vigil-bench index [SEGMENTS=10000]                  (Scripts/bench-index)
//   vigil-bench index-scale [--cameras 64] [--days 30] [--backend sqlite|postgresql]  (Scripts/bench-index --cameras …)
//   vigil-bench failover [--kills 10] [--lease 4] [--stop yes] (Scripts/bench-failover)
//   vigil-bench slow-site [--rounds 20] [--vigil PATH]  (Scripts/bench-http --slow-site)
//   vigil-bench chaos-check ROOT LOG OPERATIONS FPS      (Scripts/chaos)

FFmpegLogRoute.install(level: .notice)
let arguments = Array(CommandLine.arguments.dropFirst())
do {
    switch arguments.first {
    case "passthrough":
        try passthroughBenchmark(
            seconds: arguments.count > 1 ? Double(arguments[1]) ?? 60 : 60,
            cameraCount: arguments.count > 2 ? Int(arguments[2]) ?? 1 : 1,
            rawTimelapse: arguments.count > 3 && arguments[3] == "yuyv")
    case "reattach":
        try await reattachBenchmark(replugs: arguments.count > 1 ? Int(arguments[1]) ?? 25 : 25)
    case "index":
        try indexBenchmark(count: arguments.count > 1 ? Int(arguments[1]) ?? 10_000 : 10_000)
    case "index-scale":
        try indexScaleBenchmark(IndexScaleOptions(arguments: Array(arguments.dropFirst())))
    case "failover":
        if try await !failoverBenchmark(FailoverOptions(arguments: Array(arguments.dropFirst()))) { exit(1) }
    case "slow-site":
        if try await !slowSiteBenchmark(SlowSiteOptions(arguments: Array(arguments.dropFirst()))) { exit(1) }
    case "chaos-check" where arguments.count == 5:
        var oracle = ChaosOracle(
            root: arguments[1], recorderLog: arguments[2], operations: arguments[3], framesPerSecond: Double(arguments[4]) ?? 15,
            syntheticPrefix: "syn")
        if try !oracle.check() { exit(1) }
    default:
        FileHandle.standardError.write(Data("usage: vigil-bench passthrough [SECONDS] [CAMERAS] [yuyv] | reattach [REPLUGS] | index [SEGMENTS] | \(IndexScaleOptions.usage) | \(FailoverOptions.usage) | \(SlowSiteOptions.usage) | chaos-check ROOT LOG OPERATIONS FPS\n".utf8))
        exit(2)
    }
} catch {
    FileHandle.standardError.write(Data("vigil-bench: \(error)\n".utf8))
    exit(1)
}
