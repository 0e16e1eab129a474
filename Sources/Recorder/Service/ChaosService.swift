import Capture
import ServiceLifecycle

/// `vigil demo --chaos`: unplugs a random synthetic camera for 2–5 s every 4–8 s, and every
/// third time wedges one for longer than the watchdog allows, so recovery can be watched. At
/// shutdown every camera is unwedged, so each can finalize its segment.
struct ChaosService: Service {
    let source: SyntheticDeviceSource
    let watchdogSeconds: Double

    func run() async {
        _ = try? await cancelWhenGracefulShutdown { [source, watchdogSeconds] in
            var round = 0
            while !Task.isCancelled {
                try await Task.sleep(for: .milliseconds(Int.random(in: 4000...8000)))
                let camera = source.cameras.randomElement()!
                round += 1
                if round % 3 == 0 {
                    camera.faults.wedge(true)
                    defer { camera.faults.wedge(false) }
                    try await Task.sleep(for: .seconds(watchdogSeconds + 2))
                } else {
                    camera.faults.unplug()
                    defer { camera.faults.replug() }
                    try await Task.sleep(for: .milliseconds(Int.random(in: 2000...5000)))
                }
            }
        }
        for camera in source.cameras { camera.faults.wedge(false) }
    }
}
