import Media

/// Why a session refused a configuration or could not run. Each message says what to do.
public enum SessionError: Error, Sendable, Equatable, CustomStringConvertible {
    case noInput
    case unsupportedFormat(camera: String, requested: String, available: String)
    case unsupportedFrameRate(camera: String, requested: Double, format: DeviceFormat)
    case streamCopyNeedsCompressedSource(output: String, format: PixelFormat)
    case streamCopyCannotTransform(output: String)
    case invalidSetting(String)
    case notRunning(camera: String)
    case stopped(camera: String)
    case deviceFailed(camera: String, reason: String)

    public var description: String {
        switch self {
        case .noInput:
            return "the session has no camera input: add one with addInput before starting"
        case .unsupportedFormat(let camera, let requested, let available):
            return "camera \(camera) does not support \(requested); it offers \(available)"
        case .unsupportedFrameRate(let camera, let requested, let format):
            return "camera \(camera) cannot deliver \(DeviceFormat.rate(requested)) fps at \(format.sizeDescription) \(format.pixelFormat); choose \(DeviceFormat.rate(format.frameRates.lowerBound))–\(DeviceFormat.rate(format.frameRates.upperBound)) fps"
        case .streamCopyNeedsCompressedSource(let output, let format):
            return "\(output) copies the camera's stream, but the camera delivers uncompressed \(format): choose an MJPEG format or H.264 encoding"
        case .streamCopyCannotTransform(let output):
            return "\(output) copies the camera's stream and cannot rotate or mirror it: remove the rotation or use H.264 encoding"
        case .invalidSetting(let message):
            return message
        case .notRunning(let camera):
            return "camera \(camera) is not running: start the session first"
        case .stopped(let camera):
            return "camera \(camera) stopped before the request completed"
        case .deviceFailed(let camera, let reason):
            return "camera \(camera): \(reason)"
        }
    }
}
