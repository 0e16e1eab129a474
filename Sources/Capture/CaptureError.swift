import Glibc
import Media
import SystemPackage

/// Every failure of the capture layer, with its cause kept as a value (an `Errno`, a format), so
/// callers decide by the case, never by the text. Each description says what to do.
public enum CaptureError: Error, Sendable, Equatable, CustomStringConvertible {
    case noInput
    case unsupportedFormat(camera: String, requested: String, available: String)
    case unsupportedFrameRate(camera: String, requested: Double, format: DeviceFormat)
    case streamCopyNeedsCompressedSource(output: String, format: PixelFormat)
    case streamCopyCannotTransform(output: String)
    case invalidSetting(String)
    case notRunning(camera: String)
    case stopped(camera: String)
    /// The device refused a request; `errno` is the kernel's reason when there is one.
    case deviceFailed(camera: String, reason: String, errno: Errno? = nil)
    /// A V4L2 call failed on a node (`open`, `VIDIOC_STREAMON`, …).
    case deviceCall(call: String, node: String, errno: Errno)
    /// The camera went away (unplugged, powered off): the session is interrupted, not failed.
    /// `cause` says which: the device was removed (`unplugged`), or it stopped answering.
    case disconnected(reason: String, cause: LossCause)
    /// A file being played as a camera was read to its end.
    case endOfFile
    /// A file-system call failed (`write`, `fsync`, `rename`, …) on `path`.
    case file(operation: String, path: String, errno: Errno)

    /// The errno behind this error, if any.
    public var errno: Errno? {
        switch self {
        case .deviceFailed(_, _, let e): return e
        case .deviceCall(_, _, let e), .file(_, _, let e): return e
        default: return nil
        }
    }

    /// The disk is full (ENOSPC, EDQUOT from a file call). ENOSPC from `VIDIOC_STREAMON` is USB
    /// bandwidth, not disk, so a device call is never a full disk.
    public var isDiskFull: Bool {
        if case .file(_, _, let e) = self { return e.isDiskFull }
        return false
    }

    /// The camera is gone (unplugged): an ordinary event, not a failure.
    public var isDisconnect: Bool {
        switch self {
        case .disconnected: return true
        case .deviceCall(_, _, let e): return e == .operationNotSupportedByDevice || e == .noSuchAddressOrDevice
        default: return false
        }
    }

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
        case .deviceFailed(let camera, let reason, _):
            return "camera \(camera): \(reason)"
        case .deviceCall(let call, let node, let errno):
            return Self.describe(call: call, node: node, errno: errno)
        case .disconnected(let reason, _):
            return reason
        case .endOfFile:
            return "end of input file"
        case .file(let operation, let path, let errno):
            return "\(operation) \(path): \(Self.reason(errno))"
        }
    }

    /// The kernel's words for `errno` ("No space left on device").
    static func reason(_ errno: Errno) -> String { String(cString: strerror(errno.rawValue)) }

    private static func describe(call: String, node: String, errno: Errno) -> String {
        let reason = reason(errno)
        switch errno {
        case .resourceBusy:
            return "\(node): the camera is in use by another program (\(call): \(reason)); close that program or stop its service"
        case .permissionDenied, .notPermitted:
            return "\(node): permission denied (\(call)); add the user to the video group (sudo usermod -aG video $USER, then log in again)"
        case .noSpace where call == "VIDIOC_STREAMON":
            return "\(node): not enough USB bandwidth to start streaming (VIDIOC_STREAMON: \(reason)); use MJPEG, a lower size or frame rate, or another USB bus"
        case .noSuchFileOrDirectory:
            return "\(node): no such camera (\(call): \(reason)); run `vigil devices` to list cameras"
        case .operationNotSupportedByDevice, .noSuchAddressOrDevice:  // ENODEV, ENXIO
            return "\(node): the camera was disconnected (\(call): \(reason))"
        default:
            return "\(node): \(call) failed: \(reason)"
        }
    }
}
