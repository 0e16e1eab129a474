/// The `Session` header of a SETUP answer (RFC 2326 §12.37): `id[;timeout=seconds]`.
package struct SessionHeader: Equatable, Sendable {
    package var id: String
    /// The server's session timeout, clamped to 1 s … `RTSPLimits.sessionTimeoutSeconds`; nil when not given.
    package var timeoutSeconds: Int64?
    /// What was wrong with the timeout the server gave (clamped, or not a number), for the log.
    package var problem: String?

    /// Throws for an identifier that is empty, too long or holds anything but visible ASCII
    /// (it is sent back in every request). A timeout that is not a number is ignored.
    package init(_ value: String) throws(RTSPViolation) {
        let parts = value.split(separator: ";", omittingEmptySubsequences: false)
        let id = parts.first.map { $0.trimmingSpaces } ?? ""
        guard !id.isEmpty, id.utf8.count <= RTSPLimits.sessionIdBytes, id.utf8.allSatisfy({ (0x21...0x7E).contains($0) }) else {
            throw .badSession(CameraText.quoted(value))
        }
        self.id = String(id)
        for parameter in parts.dropFirst() {
            let pair = parameter.trimmingSpaces.split(separator: "=", maxSplits: 1)
            guard pair.count == 2, pair[0].lowercased() == "timeout" else { continue }
            let digits = pair[1].trimmingSpaces
            guard !digits.isEmpty, digits.utf8.allSatisfy({ (0x30...0x39).contains($0) }) else {
                problem = "a session timeout that is not a number, \(CameraText.quoted(digits, limit: 24)) (the default is used)"
                continue
            }
            // Too many digits for Int64 is simply "very long": clamped like any long timeout.
            let seconds = Int64(digits) ?? .max
            timeoutSeconds = min(max(seconds, 1), RTSPLimits.sessionTimeoutSeconds)
            if timeoutSeconds != seconds {
                problem = "a session timeout of \(CameraText.quoted(digits, limit: 24)) s (taken as \(timeoutSeconds!) s)"
            }
        }
    }

    /// How often to send keep-alives: half the timeout, between 2 and 30 s (30 s without one).
    package var keepaliveSeconds: Int64 {
        guard let timeoutSeconds else { return 30 }
        return min(max(timeoutSeconds / 2, 2), 30)
    }
}

/// The channel a SETUP answer's `Transport` header gives RTP over the RTSP connection
/// (`RTP/AVP/TCP;unicast;interleaved=0-1`). An answer that switched to another transport (UDP
/// ports instead of channels) is refused: RTP would never arrive on this connection.
package func interleavedChannel(transport value: String?) throws(RTSPViolation) -> UInt8 {
    guard let value else { return 0 }  // no header: the channels asked for
    let fields = value.split(separator: ";").map { $0.trimmingSpaces.lowercased() }
    // `interleaved=` alone says TCP (some cameras write the profile without "/TCP", as FFmpeg accepts).
    guard let interleaved = fields.first(where: { $0.hasPrefix("interleaved=") }),
          let channel = UInt8(interleaved.dropFirst(12).split(separator: "-").first ?? "") else {
        throw .badTransport(CameraText.quoted(value))
    }
    return channel
}
