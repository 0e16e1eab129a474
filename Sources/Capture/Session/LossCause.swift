import Media

/// Why a camera stopped delivering, as a value with few cases: metrics count by it, the
/// supervisor decides by it; the reason's text says the details (node names, addresses, errors).
public enum LossCause: String, Sendable, CaseIterable {
    /// The device node went away (the hot-plug monitor saw it).
    case unplugged
    /// The device or the connection failed under capture: a driver error (EIO, ENODEV), a
    /// network stream that ended or was closed.
    case disconnected
    /// No frame for too long: a wedged USB camera (the watchdog) or a network stall.
    case stalled
    /// A network camera could not be reached: refused, timed out, no route.
    case unreachable
    /// A network camera answered but will not stream to Vigil: 401, 403, 404.
    case denied
    /// A network camera sent something Vigil refuses (malformed, oversized).
    case badStream = "bad_stream"
    /// Capture failed with an error, or ended by itself.
    case failed
}

extension NetworkFailure {
    /// The kind of loss this failure is.
    public var lossCause: LossCause {
        switch self {
        case .refused, .timeout, .unreachable: return .unreachable
        case .unauthorized, .forbidden, .notFound: return .denied
        case .ended: return .disconnected
        case .stalled: return .stalled
        case .badStream: return .badStream
        case .aborted, .other: return .failed
        }
    }
}
