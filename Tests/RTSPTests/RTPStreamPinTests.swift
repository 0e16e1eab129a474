import Testing
@testable import RTSP

/// Stale RTP packets: some cameras (Reolink, live555) still send an earlier session's packets
/// after PLAY. Before, neither SSRC nor RTP-Info was read, and they were taken as this stream.
@Suite struct RTPStreamPinTests {
    @Test func rtpInfoIsReadPerStreamAndStrictly() {
        let info = RTPInfo("url=rtsp://cam/live/trackID=0;seq=4123;rtptime=99000, url=rtsp://cam/live/trackID=1;seq=7;rtptime=1")
        #expect(info.entries.count == 2)
        #expect(info.firstSequence(control: "rtsp://cam/live/trackID=0") == 4123)
        #expect(info.firstSequence(control: "rtsp://cam:554/live/trackID=1") == 7, "matched by its last path segment")
        #expect(RTPInfo("url=rtsp://cam/a;seq=12").firstSequence(control: "rtsp://cam/b") == 12, "the only entry")
        for bad in ["url=x;seq=70000", "url=x;seq=-1", "url=x;seq=0x10", "url=x;seq=", "seq=99999999999", ""] {
            #expect(RTPInfo(bad).firstSequence(control: "x") == nil, "\(bad)")
        }
        #expect(RTPInfo(String(repeating: "url=a;seq=1,", count: 100)).entries.count == RTPInfo.maxEntries)
        #expect(RTPInfo(String(repeating: "x", count: RTSPLimits.headerLineBytes + 1)).entries.isEmpty)
    }

    @Test func packetsBeforeRTPInfosSequenceOrOfAnotherSSRCAreStale() {
        var pin = RTPStreamPin(firstSequence: 1000)
        func admit(_ ssrc: UInt32, _ sequence: UInt16) -> Bool { pin.admit(ssrc: ssrc, sequence: sequence, nowNanos: 0) }
        #expect(!admit(0xBAD, 500), "an earlier session's sequence")
        #expect(!admit(0xBAD, 999))
        #expect(admit(0x5EED, 1002), "within the window: the first were lost")
        #expect(pin.ssrc == 0x5EED)
        #expect(!admit(0xBAD, 1003), "another SSRC once pinned")
        #expect(admit(0x5EED, 1003))
        #expect(pin.stale == 3 && !pin.gaveUpOnRTPInfo)
        #expect(pin.wouldAdmit(ssrc: 0x5EED) && !pin.wouldAdmit(ssrc: 0xBAD))
        // Wrapping past 65535 is not "before".
        var wrapping = RTPStreamPin(firstSequence: 65530)
        let wrapped = wrapping.admit(ssrc: 1, sequence: 3, nowNanos: 0)
        #expect(wrapped)
    }

    /// A camera whose RTP-Info is wrong still gets recorded: after `patience` stale packets,
    /// or a second after the first (a slow camera's 256 packets outlast its connect deadline).
    @Test func aWrongRTPInfoIsGivenUpOn() {
        var pin = RTPStreamPin(firstSequence: 1000)
        var refused = 0
        for n in 0..<RTPStreamPin.patience where !pin.admit(ssrc: 7, sequence: UInt16(20_000 + n), nowNanos: 5) { refused += 1 }
        #expect(refused == RTPStreamPin.patience)
        let taken = pin.admit(ssrc: 7, sequence: 30_000, nowNanos: 5)
        #expect(taken && pin.gaveUpOnRTPInfo && pin.ssrc == 7)
        var slow = RTPStreamPin(firstSequence: 1000)
        let early = [slow.admit(ssrc: 7, sequence: 20_000, nowNanos: 10), slow.admit(ssrc: 7, sequence: 20_001, nowNanos: 10 + RTPStreamPin.patienceNanos - 1)]
        let late = slow.admit(ssrc: 7, sequence: 20_002, nowNanos: 10 + RTPStreamPin.patienceNanos)
        #expect(early == [false, false] && late && slow.gaveUpOnRTPInfo)
        var none = RTPStreamPin(firstSequence: nil)
        let first = none.admit(ssrc: 9, sequence: 1, nowNanos: 0)
        #expect(first && none.ssrc == 9 && none.stale == 0)
    }
}
