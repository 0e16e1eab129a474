import Media
import RTSP

/// Follows the parameter sets a camera sends before its keyframes. The stream description gets
/// them when it has none (an SDP without them, a USB camera), and is replaced by a new one when
/// they change, so that the recording starts a new segment with the new parameters.
struct ParameterSetTracker {
    private var last: [UInt8] = []
    private var scratch: [UInt8] = []

    mutating func update(_ stream: StreamDescription?, keyframe: UnsafeRawBufferPointer, format: PixelFormat) -> StreamDescription? {
        AnnexB.parameterSets(keyframe, hevc: format == .hevc, into: &scratch)
        guard let stream, !scratch.isEmpty, scratch != last else { return stream }
        let first = last.isEmpty
        swap(&last, &scratch)
        // The first sets seen only fill in what the description lacks; later ones are a change.
        guard !first || !stream.hasParameterSets else { return stream }
        return last.withUnsafeBytes { stream.withParameterSets(from: $0) }
    }
}
