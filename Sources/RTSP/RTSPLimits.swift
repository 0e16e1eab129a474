/// The most Vigil accepts of each thing a camera sends. Anything larger ends the session with
/// an `RTSPViolation` that names it, and the camera's retry ladder goes on; memory and CPU per
/// camera stay bounded whatever a camera sends.
package enum RTSPLimits {
    /// One line of an answer's head (a long Digest challenge is a few hundred bytes).
    package static let headerLineBytes = 8 * 1024
    /// An answer's whole head: status line and headers, up to the blank line.
    package static let headerBytes = 32 * 1024
    /// An answer's body (an SDP is a few kilobytes).
    package static let bodyBytes = 64 * 1024
    /// Parameter sets from an SDP, all together.
    package static let parameterSetBytes = 16 * 1024
    /// One picture (access unit): well above any real 4K keyframe.
    package static let pictureBytes = 16 * 1024 * 1024
    /// Pictures a second (the fastest real cameras send 240).
    package static let picturesPerSecond = 1000
    /// A `Session:` identifier.
    package static let sessionIdBytes = 256
    /// A session timeout beyond an hour is taken as an hour (keep-alives are sent every half of it, at most every 30 s).
    package static let sessionTimeoutSeconds: Int64 = 3600
}

/// Counts pictures per second of arrival; more than `RTSPLimits.picturesPerSecond` is a camera
/// that floods (its timestamps or markers are broken), refused rather than queued.
package struct PictureRateLimit {
    private var windowStart: Int64 = .min
    private var count = 0

    package init() {}

    /// Whether one more picture, arriving at `nanos` on a monotonic clock, is within the limit.
    package mutating func admit(atNanos nanos: Int64) -> Bool {
        if windowStart == .min || nanos &- windowStart >= 1_000_000_000 || nanos < windowStart {
            windowStart = nanos
            count = 0
        }
        count += 1
        return count <= RTSPLimits.picturesPerSecond
    }
}
