/// How long recordings are kept (per camera), separately for video and stills.
public struct RetentionLimits: Sendable, Equatable {
    /// nil: no age limit.
    public var maxAgeDays: Double?
    /// nil: no size limit (per camera).
    public var maxBytes: Int64?

    public init(maxAgeDays: Double? = nil, maxBytes: Int64? = nil) {
        self.maxAgeDays = maxAgeDays
        self.maxBytes = maxBytes
    }
}

/// One camera's own limits, overriding the defaults.
public struct CameraRetention: Sendable, Equatable {
    public var videos: RetentionLimits
    public var stills: RetentionLimits

    public init(videos: RetentionLimits, stills: RetentionLimits) {
        self.videos = videos
        self.stills = stills
    }
}

/// Retention, on by default: videos are kept 30 days, stills (the timelapse is the product) as
/// long as there is room, and at least 5 % or 2 GiB of the disk (whichever is larger, but never
/// more than half of it) stays free.
public struct RetentionPolicy: Sendable, Equatable {
    public var videos = RetentionLimits(maxAgeDays: 30)
    public var stills = RetentionLimits()
    /// Per-camera overrides, by camera name.
    public var cameras: [String: CameraRetention] = [:]
    public var minFreePercent: Double = 5
    public var minFreeBytes: Int64 = 2 << 30

    public init() {}

    /// The limits that apply to a camera.
    public func limits(for camera: String) -> CameraRetention {
        cameras[camera] ?? CameraRetention(videos: videos, stills: stills)
    }

    /// Bytes that must stay free on a disk of `totalBytes`.
    public func freeFloor(totalBytes: Int64) -> Int64 {
        min(max(Int64(Double(totalBytes) * minFreePercent / 100), minFreeBytes), totalBytes / 2)
    }
}
