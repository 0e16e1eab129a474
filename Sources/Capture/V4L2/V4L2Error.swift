import Glibc

/// A failed V4L2 call: which call, on which node, the kernel's reason, and what to do.
public struct V4L2Error: Error, CustomStringConvertible, Sendable, Equatable {
    public let call: String
    public let node: String
    public let errno: Int32

    public init(_ call: String, node: String, errno: Int32) {
        self.call = call
        self.node = node
        self.errno = errno
    }

    /// The camera is gone (unplugged): an ordinary event, not a failure.
    public var isDisconnect: Bool { errno == ENODEV || errno == ENXIO }

    public var description: String {
        let reason = String(cString: strerror(errno))
        switch errno {
        case EBUSY:
            return "\(node): the camera is in use by another program (\(call): \(reason)); close that program or stop its service"
        case EACCES, EPERM:
            return "\(node): permission denied (\(call)); add the user to the video group (sudo usermod -aG video $USER, then log in again)"
        case ENOSPC where call == "VIDIOC_STREAMON":
            return "\(node): not enough USB bandwidth to start streaming (VIDIOC_STREAMON: \(reason)); use MJPEG, a lower size or frame rate, or another USB bus"
        case ENOENT:
            return "\(node): no such camera (\(call): \(reason)); run `vigil devices` to list cameras"
        case ENODEV, ENXIO:
            return "\(node): the camera was disconnected (\(call): \(reason))"
        default:
            return "\(node): \(call) failed: \(reason)"
        }
    }
}
