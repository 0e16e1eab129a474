@testable import Capture
import CaptureTesting
import Foundation
import Media
import RTSP
import Testing

@Suite struct NetworkAddressTests {
    @Test func credentialsAreRedacted() {
        #expect(redactedAddress("rtsp://user:pa@ss@10.0.0.2:554/stream1") == "rtsp://***@10.0.0.2:554/stream1")
        #expect(redactedAddress("rtsp://10.0.0.2/stream1") == "rtsp://10.0.0.2/stream1")
        #expect(redactedAddress("not a url") == "not a url")
        // Without ://, still nothing before the @.
        #expect(redactedAddress("admin:secret@cam/stream1") == "***@cam/stream1")
        // An @ past the host cannot be told from the end of a password holding / ? or #
        // (`rtsp://admin:12/34@cam/` is host admin, port 12 to a URL parser): masked up to it.
        #expect(redactedAddress("rtsp://admin:12/34@cam/live") == "rtsp://***@cam/live")
        #expect(redactedAddress("http://admin@cam/video.mjpg?x=a@b") == "http://***@b")
        // Parameters that name a secret, in the query or in the path as some cameras want them.
        #expect(redactedAddress("http://cam/videostream.cgi?user=admin&pwd=secret&rate=0") == "http://cam/videostream.cgi?user=admin&pwd=***&rate=0")
        #expect(redactedAddress("rtsp://cam:554/user=admin_password=secret_channel=1_stream=0.sdp") == "rtsp://cam:554/user=admin_password=***")
        #expect(redactedAddress("rtsp://cam/live?Token=abc#x") == "rtsp://cam/live?Token=***#x")
        #expect(redactedAddress("rtsp://cam/live?monkey=1&passport=2") == "rtsp://cam/live?monkey=1&passport=2")
    }

    /// A password holding any of / ? # @ : % never shows, and a check says which addresses
    /// cannot be read (the first three end the host part early; the others are read as meant).
    @Test(arguments: ["/", "?", "#", "@", ":", "%"]) func aPasswordHoldingASeparatorIsMasked(_ separator: String) {
        let url = "rtsp://admin:se\(separator)cret@192.168.1.20:554/stream1"
        #expect(redactedAddress(url) == "rtsp://***@192.168.1.20:554/stream1")
        let problem = addressProblem(url)
        #expect((problem != nil) == "/?#".contains(separator), "\(problem ?? "no problem")")
        #expect(!(problem ?? "").contains("se") && !(problem ?? "").contains("cret"))
        #expect(addressProblem("rtsp://admin:12\(separator)34@cam/live") != nil || !"/?#".contains(separator))
    }

    @Test func addressesThatCannotBeReadAreNamed() {
        #expect(addressProblem("rtsp://admin:secret@192.168.1.20:554/stream1") == nil)
        #expect(addressProblem("rtsp://[fe80::1]:8554/stream1") == nil)
        #expect(addressProblem("http://cam/video.mjpg") == nil)
        #expect(addressProblem("rtsp://:554/x") != nil)
        #expect(addressProblem("rtsp://cam:99999/x") != nil)
        #expect(addressProblem("rtsp://[fe80::1/x") != nil)
        #expect(addressProblem("rtsp://cam/x@y") != nil)
    }

    /// Parameter sets sent before keyframes: the first fill in a description without them, a
    /// repetition (also before each slice of one picture) changes nothing, new ones give a new
    /// description (and so a new segment).
    @Test func parameterSetChangesGiveANewStream() {
        let spsA: [UInt8] = [0, 0, 0, 1, 0x67, 0x42, 0x00, 0x0A]
        let spsB: [UInt8] = [0, 0, 0, 1, 0x67, 0x42, 0x00, 0x1E]
        let pps: [UInt8] = [0, 0, 0, 1, 0x68, 0xCE, 0x38, 0x80]
        let idr: [UInt8] = [0, 0, 0, 1, 0x65, 0x88, 0x84, 0x00]
        var tracker = ParameterSetTracker()
        let bare = StreamDescription(videoCodec: .h264, width: 160, height: 120)
        #expect(!bare.hasParameterSets)
        func update(_ s: StreamDescription, _ bytes: [UInt8]) -> StreamDescription {
            bytes.withUnsafeBytes { tracker.update(s, keyframe: $0, format: .h264)! }
        }
        let first = update(bare, spsA + pps + idr)
        #expect(first !== bare && first.hasParameterSets)
        #expect(update(first, spsA + pps + idr) === first)
        #expect(update(first, spsA + pps + idr + spsA + pps + idr) === first)
        #expect(update(first, idr) === first)
        let changed = update(first, spsB + pps + idr)
        #expect(changed !== first && !changed.matches(first))
        // A description that came with its sets (an SDP) keeps them at the first keyframe.
        var fresh = ParameterSetTracker()
        let fromSDP = first
        #expect((spsA + pps + idr).withUnsafeBytes { fresh.update(fromSDP, keyframe: $0, format: .h264) } === fromSDP)
    }
}
