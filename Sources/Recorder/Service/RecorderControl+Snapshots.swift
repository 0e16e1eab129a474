import Capture
import Foundation
import Plumbing

extension RecorderControl {
    // MARK: - Snapshots

    /// SIGUSR1: every camera with a snapshot job saves a still now (written and fsynced on the
    /// I/O thread).
    func takeSnapshots() async {
        let cameras = jobs.values.filter { $0.photo != nil }
        guard !cameras.isEmpty else {
            logger.notice("snapshot requested, but no camera has a [[snapshot]] job")
            return
        }
        for job in cameras {
            do {
                let photo = try await job.photo!.capturePhoto()
                let path = try await RecorderService.controlIO.run { [root, name = job.camera.name] in
                    let path = try StorageLayout(root: root).snapshot(camera: name, at: photo.wallNanos)
                    try photo.data.withUnsafeBytes { try DurableFile.write($0, to: path) }
                    return path
                }
                Console.line("Snapshot \(job.camera.name): \(path)")
                events.emit(.stillSaved(camera: job.camera.name, path: path, shotWallNanos: nil))
            } catch {
                logger.error("camera \(job.camera.name): snapshot failed: \(error)")
            }
        }
    }
}
