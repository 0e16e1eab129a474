import Media

/// Joins the session's input to one output and carries what that output sees: whether it is
/// enabled, and the rotation and mirroring applied to its pictures.
public struct ConnectionSettings: Sendable, Equatable {
    public var isEnabled = true
    public var rotation: Rotation = .none
    public var isMirrored = false

    public init(isEnabled: Bool = true, rotation: Rotation = .none, isMirrored: Bool = false) {
        self.isEnabled = isEnabled
        self.rotation = rotation
        self.isMirrored = isMirrored
    }

    var transforms: Bool { rotation != .none || isMirrored }
}

/// A connection from the session's camera to an output (`AVCaptureConnection`).
public struct CaptureConnection: Sendable {
    public let output: CaptureOutput
    public var settings: ConnectionSettings
}
