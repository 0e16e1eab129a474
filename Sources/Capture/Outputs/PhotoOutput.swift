import Foundation
import Media
import Synchronization

/// A still taken on demand (`AVCapturePhotoOutput`).
public struct Photo: Sendable {
    /// JPEG file bytes.
    public let data: Data
    public let width: Int
    public let height: Int
    /// When the frame was captured (Unix epoch, nanoseconds).
    public let wallNanos: Int64
    public let sequence: UInt64
}

public struct PhotoSettings: Sendable {
    /// JPEG quality 1–100 (used when the photo has to be encoded).
    public var quality: Int
    public init(quality: Int = 92) { self.quality = quality }
}

/// Takes a photo from the next frame on request: `try await output.capturePhoto()`.
/// @unchecked as its base class: its own state is touched only on its worker thread.
public final class PhotoOutput: CaptureOutput, @unchecked Sendable {
    private struct Request {
        let settings: PhotoSettings
        let continuation: CheckedContinuation<Photo, Error>
    }
    private let waiting = Mutex<[Request]>([])
    /// Requests claimed by a frame on the capture thread, served by the worker.
    private let claimed = Mutex<[Request]>([])
    private let stills = StillMaker()

    public init() {
        super.init(name: "photo", queueCapacity: 2, dropsLateFrames: true)
    }

    /// The next frame the camera delivers, as a JPEG.
    public func capturePhoto(_ settings: PhotoSettings = PhotoSettings()) async throws -> Photo {
        guard (1...100).contains(settings.quality) else {
            throw CaptureError.invalidSetting("JPEG quality must be 1–100, not \(settings.quality)")
        }
        guard let context else { throw CaptureError.notRunning(camera: "(no session)") }
        return try await withCheckedThrowingContinuation { continuation in
            waiting.withLock { $0.append(Request(settings: settings, continuation: continuation)) }
            // If the session stopped meanwhile, nobody will serve it: fail at once.
            if !isAttached { failAll(CaptureError.notRunning(camera: context.cameraID)) }
        }
    }

    override func accepts(_ frame: CapturedFrame) -> Bool {
        let requests = waiting.withLock { w -> [Request] in
            defer { w.removeAll() }
            return w
        }
        guard !requests.isEmpty else { return false }
        claimed.withLock { $0.append(contentsOf: requests) }
        return true
    }

    override func process(_ frame: CapturedFrame, _ connection: ConnectionSettings) {
        let requests = claimed.withLock { c -> [Request] in
            defer { c.removeAll() }
            return c
        }
        for request in requests {
            do {
                let photo = try stills.jpeg(of: frame, connection, quality: request.settings.quality) { bytes, w, h in
                    Photo(data: Data(bytes), width: w, height: h, wallNanos: frame.wallNanos, sequence: frame.sequence)
                }
                request.continuation.resume(returning: photo)
            } catch {
                request.continuation.resume(throwing: error)
            }
        }
    }

    override func finish() {
        failAll(CaptureError.stopped(camera: context?.cameraID ?? "?"))
    }

    private func failAll(_ error: Error) {
        let all = waiting.withLock { w -> [Request] in defer { w.removeAll() }; return w }
            + claimed.withLock { c -> [Request] in defer { c.removeAll() }; return c }
        for r in all { r.continuation.resume(throwing: error) }
    }
}
