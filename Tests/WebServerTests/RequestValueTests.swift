import CaptureTesting
import Foundation
import Hummingbird
import HummingbirdTesting
import Recorder
import Testing
@testable import WebServer

/// Every value a request carries is checked before use: a time Vigil cannot hold is a 400 that
/// names its parameter (it used to trap, stopping every camera: one `<img>` on any web page
/// could do it), and an id or a range has one written form.
@Suite(.timeLimit(.minutes(2))) struct RequestValueTests {
    /// A time the API writes is read back as the same millisecond, in any zone: a client that
    /// asks for a clip from a recording's `start` gets its first frame (through a Double,
    /// …29.517 came back as …29.516999999 and the frame stamped .517 was left out).
    @Test func aTimeTheAPIWritesIsReadBackToTheMillisecond() throws {
        let zones = ["UTC", "Europe/Berlin", "America/St_Johns", "Asia/Kolkata"].map { TimeZone(identifier: $0)! }
        var state: UInt64 = 0x5EED
        var instants: [Int64] = [1_795_727_489_517_000_000, 0, 1_000_000, 9_214_646_399_999_000_000]
        for _ in 0..<2000 {
            state = state &* 6_364_136_223_846_793_005 &+ 1_442_695_040_888_963_407
            instants.append(Int64(state >> 4) % 4_102_444_800_000 * 1_000_000)  // 1970 to 2100, whole milliseconds
        }
        for zone in zones {
            let time = APITime(timeZone: zone)
            for nanos in instants {
                let text = time.string(nanos)
                #expect(try TimeArgument.nanos(text, end: false, timeZone: zones[0]) == nanos, "\(text)")
            }
        }
        // Below the millisecond the API's text is cut, never rounded up past the frame.
        #expect(APITime(timeZone: zones[0]).string(1_795_727_489_517_999_999) == "2026-11-26T21:11:29.517Z")
        #expect(try TimeArgument.nanos("2026-11-26T21:11:29.517999999Z", end: false) == 1_795_727_489_517_999_999)
    }

    @Test func timesOutsideWhatVigilCanHoldAre400NamingTheParameter() async throws {
        let recording = try await Recording.start(segments: 1)
        await recording.stop()
        defer { recording.remove() }
        let camera = "/api/v1/cameras/\(Recording.camera)"
        try await recording.server().application().test(.router) { client in
            for route in ["recordings", "stills", "events", "clip.mp4"] {
                for (key, value) in [("from", "0001-01-01"), ("from", "9999-12-31"), ("to", "2263-01-01T00:00:00Z"), ("from", "1969-12-31T23:59:59Z")] {
                    try await client.execute(uri: "\(camera)/\(route)?\(key)=\(value)", method: .get) { response in
                        #expect(response.status == .badRequest, "\(route) \(key)=\(value)")
                        let message = response.errorMessage ?? ""
                        #expect(message.contains("\(key)=\(value)") && message.contains("1970-01-01 to 2261-12-31"), "\(message)")
                    }
                }
            }
            // The edges of the range are times like any other.
            try await client.execute(uri: "\(camera)/recordings?from=1970-01-01T00:00:00Z&to=2261-12-31T23:59:59Z", method: .get) { response in
                #expect(response.status == .ok)
                #expect(((response.json()["recordings"] as? [Any])?.count ?? 0) >= 1)
            }
        }
    }

    @Test func idsAndRangesHaveOneWrittenForm() async throws {
        let recording = try await Recording.start(segments: 1)
        await recording.stop()
        defer { recording.remove() }
        let segment = try #require(try recording.keeper.index.entries(kind: .segment, states: [.complete]).first)
        try await recording.server().application().test(.router) { client in
            let size = try await client.execute(uri: "/api/v1/recordings/\(segment.id)/file", method: .get) { response in
                #expect(response.status == .ok)
                return response.body.readableBytes
            }
            for text in ["+\(segment.id)", "0\(segment.id)", "\(segment.id) ", "99999999999999999999999", "0", "-0"] {
                let path = "/api/v1/recordings/\(text.addingPercentEncoding(withAllowedCharacters: .alphanumerics) ?? text)/file"
                try await client.execute(uri: path, method: .get) { response in
                    #expect(response.status == .notFound, "\(text)")
                    #expect(response.errorMessage != nil)
                }
            }
            // A range with a sign or a number past Int64 is no range (the whole file, as RFC 9110 says).
            for range in ["bytes=+0-+9", "bytes=0-99999999999999999999999", "bytes=-+5"] {
                try await client.execute(uri: "/api/v1/recordings/\(segment.id)/file", method: .get, headers: [.range: range]) { response in
                    #expect(response.status == .ok, "\(range)")
                    #expect(response.body.readableBytes == size)
                }
            }
            try await client.execute(uri: "/api/v1/recordings/\(segment.id)/file", method: .get, headers: [.range: "bytes=0-9"]) { response in
                #expect(response.status == .partialContent)
                #expect(response.body.readableBytes == 10)
            }
        }
    }

    @Test func decimalsAreDigitsOnly() {
        #expect(RequestValues.decimal("42") == 42)
        #expect(RequestValues.decimal("0") == 0)
        #expect(RequestValues.decimal("9223372036854775807") == .max)
        for text in ["", "+2", "02", "-1", " 2", "2 ", "9223372036854775808", "１２", "0x10"] {
            #expect(RequestValues.decimal(Substring(text)) == nil, "\(text)")
        }
    }
}
