/// Hands every frame to a consumer on the output's own thread (`AVCaptureVideoDataOutput`):
/// motion analysis, live preview, tests. With `dropsLateFrames` (the default, like
/// `alwaysDiscardsLateVideoFrames`) a slow consumer loses its late frames and nothing else does.
/// @unchecked only because Swift makes a subclass restate its base class's; its one property is a Sendable closure.
public final class FrameOutput: CaptureOutput, @unchecked Sendable {
    private let handler: @Sendable (CapturedFrame) -> Void

    /// `handler` runs on the output's thread; the frame is valid only during the call.
    public init(name: String = "frames", queueCapacity: Int = 4, dropsLateFrames: Bool = true, handler: @escaping @Sendable (CapturedFrame) -> Void) {
        self.handler = handler
        super.init(name: name, queueCapacity: queueCapacity, dropsLateFrames: dropsLateFrames)
    }

    override func process(_ frame: CapturedFrame, _ connection: ConnectionSettings) {
        handler(frame)
    }
}
