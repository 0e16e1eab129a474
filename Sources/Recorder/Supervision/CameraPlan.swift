import Capture
import Foundation

/// What to record from one camera, matched by its stable identity (never by node path).
public struct CameraPlan: Sendable {
    /// The camera's name in recordings, events and logs.
    public var cameraID: String
    /// Which present device is this camera (default: the device whose id is `cameraID`).
    public var matches: @Sendable (CaptureDevice) -> Bool
    public var format: FormatRequest
    public var frameRate: Double
    public var controls: [String: Int64]
    /// The outputs, kept across reattaches (their counters and cadence carry on).
    public var outputs: [(CaptureOutput, ConnectionSettings)]
    /// When the camera must be open: while any of its jobs is active (nil: always).
    public var schedule: (any OutputSchedule)?
    /// A second stream of another camera (its `detect_url`): supervised like a camera (retried,
    /// its losses reported), but not listed as one (`Supervisor.status`).
    public var isAuxiliary = false
    /// The fence of the cluster lease under which this node records the camera (nil: not leased).
    public var fence: CaptureFence?
    /// The camera's timeline across its sessions and the recorder's runs (nil: not kept).
    public var timeline: CameraTimeline?

    public init(
        cameraID: String, matches: (@Sendable (CaptureDevice) -> Bool)? = nil, format: FormatRequest, frameRate: Double,
        controls: [String: Int64] = [:], outputs: [(CaptureOutput, ConnectionSettings)], schedule: (any OutputSchedule)? = nil
    ) {
        self.cameraID = cameraID
        self.matches = matches ?? { $0.id == cameraID }
        self.format = format
        self.frameRate = frameRate
        self.controls = controls
        self.outputs = outputs
        self.schedule = schedule
    }
}
