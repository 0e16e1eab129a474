// sources: Sources/S3/S3XML.swift
// options: -detect_leaks=0
// asan: detect_leaks=0
// (FoundationXML leaks the CFError of each malformed document, 72 bytes, inside libxml2's error
// callback: swift-corelibs-foundation's, not Vigil's. Leaks are not checked here for that.)
// What an S3-compatible server answers (listings, parts, errors), parsed into S3XML's element
// tree: bounded in size and depth, never a trap, whatever the bytes.
@_cdecl("LLVMFuzzerTestOneInput")
public func fuzzOne(_ data: UnsafePointer<UInt8>, _ size: Int) -> Int32 {
    let bytes = Array(UnsafeBufferPointer(start: data, count: size))
    if let root = try? S3XML.parse(bytes) {
        _ = S3XML.error(root)
        for part in root.children("Part") { _ = (part.value("PartNumber").flatMap { Int($0) }, part.value("Size").flatMap { Int64($0) }) }
        _ = root.value("NextContinuationToken")
    }
    return 0
}
