/// The `RTP-Info` header of a PLAY answer (RFC 2326 §12.33): for each stream, its control URL
/// and the sequence number and RTP time of the first packet PLAY will send. Read strictly and
/// bounded; a part that cannot be read is left out, never guessed.
package struct RTPInfo: Equatable, Sendable {
    package struct Entry: Equatable, Sendable {
        package var url: String?
        package var sequence: UInt16?
        package var rtpTime: UInt32?
    }

    package var entries: [Entry] = []
    /// The most streams one answer describes; more are ignored.
    package static let maxEntries = 16

    package init(_ value: String) {
        guard value.utf8.count <= RTSPLimits.headerLineBytes else { return }
        for item in value.split(separator: ",").prefix(Self.maxEntries) {
            var entry = Entry()
            for parameter in item.split(separator: ";") {
                let pair = parameter.trimmingSpaces.split(separator: "=", maxSplits: 1)
                guard pair.count == 2 else { continue }
                let value = pair[1].trimmingSpaces
                switch pair[0].trimmingSpaces.lowercased() {
                case "url": entry.url = String(value)
                case "seq": entry.sequence = Self.number(value).flatMap { UInt16(exactly: $0) }
                case "rtptime": entry.rtpTime = Self.number(value).flatMap { UInt32(exactly: $0) }
                default: continue
                }
            }
            entries.append(entry)
        }
    }

    /// The first sequence number of the stream set up at `control` (an absolute URL): the
    /// entry whose URL is it or ends with its last path segment, else the only entry.
    package func firstSequence(control: String) -> UInt16? {
        let track = control.split(separator: "/").last.map(String.init) ?? control
        let matching = entries.first { $0.url == control || ($0.url.map { !track.isEmpty && $0.hasSuffix("/" + track) } ?? false) }
        return (matching ?? (entries.count == 1 ? entries[0] : nil))?.sequence
    }

    /// Digits only, at most 10.
    private static func number(_ text: Substring) -> UInt64? {
        guard (1...10).contains(text.utf8.count), text.utf8.allSatisfy({ (0x30...0x39).contains($0) }) else { return nil }
        return UInt64(text)
    }
}

/// Which RTP packets are this session's stream (Retina's `InorderParser` does the same): the
/// first packet taken is the one the PLAY answer's `RTP-Info` announced (its sequence number, or
/// up to `window` after it when the first were lost), and its SSRC is then pinned. Packets
/// before it, and later packets of another SSRC, are stale (an earlier session's that some
/// cameras still send, or another stream's) and are dropped and counted. A camera whose RTP-Info
/// is wrong is not left without video: after `patience` stale packets, or `patienceNanos` since
/// the first (a camera sending 25 packets a second would take 10 s to send 256, past its
/// connect deadline), the next one is taken.
package struct RTPStreamPin: Sendable {
    package private(set) var ssrc: UInt32?
    package let firstSequence: UInt16?
    package private(set) var stale = 0
    /// True once RTP-Info's sequence was given up on (the camera's is wrong).
    package private(set) var gaveUpOnRTPInfo = false

    package static let window: UInt16 = 64
    package static let patience = 256
    package static let patienceNanos: Int64 = 1_000_000_000
    /// When the first stale packet came (monotonic nanoseconds), before one was taken.
    private var firstStaleNanos: Int64?

    package init(firstSequence: UInt16?) {
        self.firstSequence = firstSequence
    }

    /// True when the packet is this stream's; counts it as stale otherwise. `nowNanos`: a
    /// monotonic clock's reading (read only until a packet was taken).
    package mutating func admit(ssrc packetSSRC: UInt32, sequence: UInt16, nowNanos: @autoclosure () -> Int64) -> Bool {
        if let ssrc {
            guard packetSSRC == ssrc else {
                stale &+= 1
                return false
            }
            return true
        }
        if let first = firstSequence, sequence &- first >= Self.window {
            let now = nowNanos()
            let since = firstStaleNanos ?? now
            guard stale >= Self.patience || now - since >= Self.patienceNanos else {
                firstStaleNanos = since
                stale &+= 1
                return false
            }
            gaveUpOnRTPInfo = true
        }
        ssrc = packetSSRC
        return true
    }

    /// Whether a packet would be taken, without counting it (reading ahead).
    package func wouldAdmit(ssrc packetSSRC: UInt32) -> Bool {
        ssrc.map { $0 == packetSSRC } ?? true
    }
}
