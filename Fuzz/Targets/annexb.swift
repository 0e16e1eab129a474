// H.264/H.265 access units in Annex B as cameras send them (RTSP pictures, libavformat packets,
// a USB camera's H.264): picture starts, keyframes and parameter sets. The first byte chooses.
@_cdecl("LLVMFuzzerTestOneInput")
public func fuzzOne(_ data: UnsafePointer<UInt8>, _ size: Int) -> Int32 {
    guard size >= 1 else { return 0 }
    let hevc = data[0] & 1 == 1
    let bytes = UnsafeRawBufferPointer(start: data + 1, count: size - 1)
    _ = AnnexB.startsPicture(bytes, hevc: hevc)
    _ = AnnexB.isKeyframe(bytes, hevc: hevc)
    var sets: [UInt8] = []
    AnnexB.parameterSets(bytes, hevc: hevc, into: &sets)
    _ = sets.withUnsafeBytes { AnnexB.hasEveryParameterSet($0, hevc: hevc) }
    precondition(sets.count <= 2 * bytes.count + 4)
    return 0
}
