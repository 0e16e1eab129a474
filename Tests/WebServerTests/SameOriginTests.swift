import CaptureTesting
import Foundation
import Hummingbird
import HummingbirdTesting
import Recorder
import Testing
@testable import WebServer

/// Only Vigil's own page may change anything or ask for what costs work. An origin is a scheme,
/// a host and a port: a page on another port of loopback (any local dev server or notebook)
/// used to count as Vigil's own, and cross-site `<video>`/`<img>` could make it build clips.
/// The test client's requests say `Host: localhost`, so `http://localhost` is the page's origin.
@Suite(.timeLimit(.minutes(2))) struct SameOriginTests {
    static let ownOrigin = "http://localhost"

    /// What another program's page makes a browser send, by the kind of request it makes.
    static let foreignPages: [HTTPFields] = [
        [.secFetchSite: "cross-site"], [.secFetchSite: "same-site"], [.origin: "http://localhost:34582"],
        [.origin: "http://127.0.0.1:34582", .secFetchSite: "same-site"], [.origin: "https://evil.example"],
        [.referer: "http://localhost:34582/attack.html"], [.referer: "http://evil.example/"], [.origin: "null"],
    ]

    @Test func mediaAndListingsAreServedOnlyToThisServersPageOrABearer() async throws {
        let recording = try await Recording.start(segments: 2)
        defer { recording.remove() }
        let segment = try #require(try recording.keeper.index.entries(kind: .segment, states: [.complete]).first)
        let iso = { (nanos: Int64) in ISO8601DateFormatter().string(from: Date(timeIntervalSince1970: Double(nanos) / 1e9)) }
        let clip = "/api/v1/cameras/\(Recording.camera)/clip.mp4?from=\(iso(segment.startNanos))&to=\(iso(segment.startNanos + 2_000_000_000))"
        let paths = ["/api/v1/cameras/\(Recording.camera)/snapshot.jpg", "/api/v1/recordings/\(segment.id)/file", clip, "/api/v1/cameras"]
        // Live MJPEG never ends: only its refusals are asked here (LiveRouteTests serves it).
        let live = "/api/v1/cameras/\(Recording.camera)/live.mjpeg"
        try await recording.stopping {
            try await recording.server().application().test(.router) { client in
                for path in paths + [live] {
                    for headers in Self.foreignPages {
                        try await client.execute(uri: path, method: .get, headers: headers) { response in
                            #expect(response.status == .forbidden, "\(path) \(headers)")
                            #expect(response.errorMessage?.contains("only Vigil's own page") == true, "\(path) \(headers)")
                        }
                    }
                }
                for path in paths {
                    // This server's page, a typed address, curl: served (or not for reasons of its own).
                    for headers: HTTPFields in [[.secFetchSite: "same-origin", .referer: Self.ownOrigin + "/"], [.secFetchSite: "none"], [:],
                                                [.origin: Self.ownOrigin], [.secFetchSite: "cross-site", .authorization: "Bearer anything"]] {
                        try await client.execute(uri: path, method: .get, headers: headers) { response in
                            #expect(response.status != .forbidden, "\(path) \(headers): \(response.errorMessage ?? "")")
                        }
                    }
                }
                // The page itself may be opened from any link.
                for path in ["/", "/static/app.js", "/healthz"] {
                    try await client.execute(uri: path, method: .get, headers: [.secFetchSite: "cross-site", .referer: "http://evil.example/"]) { response in
                        #expect(response.status == .ok, "\(path)")
                    }
                }
            }
        }
    }

    /// A request that changes something is checked whatever it carries: a bearer token too.
    @Test func whatChangesSomethingIsCheckedEvenWithABearer() async throws {
        let recording = try await Recording.start(segments: 0)
        defer { recording.remove() }
        try await recording.stopping {
            try await recording.server(AuthTests.settings(listen: "0.0.0.0:0")).application().test(.router) { client in
                for headers in Self.foreignPages {
                    var withToken = headers
                    withToken[.authorization] = "Bearer \(AuthTests.token)"
                    try await client.execute(uri: "/logout", method: .post, headers: withToken) { response in
                        #expect(response.status == .forbidden, "\(headers)")
                    }
                }
                try await client.execute(uri: "/logout", method: .post, headers: [.origin: Self.ownOrigin]) { #expect($0.status == .seeOther) }
                // Behind a reverse proxy on another port that passes a Host without it, the
                // browser's own Sec-Fetch-Site: same-origin is enough.
                try await client.execute(uri: "/logout", method: .post, headers: [.origin: "https://localhost:8443", .secFetchSite: "same-origin"]) {
                    #expect($0.status == .seeOther)
                }
            }
        }
    }

    @Test func originsAreSchemeHostAndPort() {
        #expect(WebOrigin("http://127.0.0.1:8080") == WebOrigin("HTTP://127.0.0.1:8080/"))
        #expect(WebOrigin("http://localhost")?.port == 80 && WebOrigin("https://localhost")?.port == 443)
        #expect(WebOrigin("http://[::1]:8080")?.host == "::1")
        #expect(WebOrigin("http://vigil.lan:8080/day?x=1")?.host == "vigil.lan")
        // A Referer's path may be long: only its scheme and authority are read.
        #expect(WebOrigin("http://vigil.lan:8080/" + String(repeating: "d", count: 5000))?.port == 8080)
        #expect(WebOrigin("http://h:99999999999999999999") == nil && WebOrigin("http://" + String(repeating: "h", count: 400)) == nil)
        for bad in ["null", "", "file:///etc/passwd", "http://", "http://a b", "ftp://host", "http://host:99999",
                    String(repeating: "a", count: 5000)] {
            #expect(WebOrigin(bad) == nil, "\(bad)")
        }
        #expect(WebAuthority.split("127.0.0.1:8080")! == ("127.0.0.1", 8080))
        #expect(WebAuthority.split("localhost")! == ("localhost", nil))
        for bad in ["host:0", "host:65536", "host:000080", "host:99999999999999999999", "[::1]:70000"] {
            #expect(WebAuthority.split(bad) == nil, "\(bad)")
        }
    }
}
