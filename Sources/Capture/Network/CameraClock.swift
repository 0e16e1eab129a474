/// Places camera timestamps on Vigil's clocks: the first packet is anchored to its arrival
/// time; later packets are spaced by the camera's timestamps. A timestamp that goes back,
/// repeats, or drifts more than `jumpLimitNanos` from its arrival re-anchors and is flagged,
/// so a recording ends there. Packets without timestamps (MJPEG over HTTP) take their arrival.
struct CameraClock {
    static let jumpLimitNanos: Int64 = 3_000_000_000
    private var anchor: (camera: Int64, monotonic: Int64, wall: Int64)?
    private var lastCamera: Int64?

    mutating func place(cameraTicks: Int64?, arrivalMonotonic: Int64, arrivalWall: Int64) -> (monotonic: Int64, wall: Int64, discontinuity: Bool) {
        guard let cameraTicks else { return (arrivalMonotonic, arrivalWall, false) }
        let camera = cameraTicks * 100_000 / 9  // 1/90000 s → ns
        var discontinuity = false
        if let a = anchor, let last = lastCamera {
            let mapped = a.monotonic + (camera - a.camera)
            discontinuity = camera <= last || abs(mapped - arrivalMonotonic) > Self.jumpLimitNanos
        }
        if anchor == nil || discontinuity { anchor = (camera, arrivalMonotonic, arrivalWall) }
        lastCamera = camera
        let offset = camera - anchor!.camera
        return (anchor!.monotonic + offset, anchor!.wall + offset, discontinuity)
    }
}
