// sources: Sources/Cluster/PeerWitness.swift Sources/Recorder/Configuration/NodeName.swift
// A peer's answer to `GET /api/v1/cluster/witness`: refused, or a node name and two times in
// range, which the lease keeper turns into durations without a trap.
import Foundation

@_cdecl("LLVMFuzzerTestOneInput")
public func fuzzOne(_ data: UnsafePointer<UInt8>, _ size: Int) -> Int32 {
    guard let witness = PeerWitness(answer: Data(bytes: data, count: size)) else { return 0 }
    precondition(NodeName.isValid(witness.node))
    _ = Duration.milliseconds(Int64(witness.reachedSecondsAgo * 1000))
    _ = Duration.milliseconds(Int64(witness.connectedForSeconds * 1000))
    return 0
}
