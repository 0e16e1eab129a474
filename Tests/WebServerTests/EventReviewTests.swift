import CaptureTesting
import Foundation
import Hummingbird
import HummingbirdTesting
@testable import Recorder
import Testing
@testable import WebServer

/// Event review: `GET /api/v1/events` (newest first across cameras, filters, pages that follow
/// `next` to the end), `POST /api/v1/events/{id}/reviewed` (kept in the index, protected by the
/// token and same-origin only), and the index's schema version 3 that holds the flag.
@Suite(.timeLimit(.minutes(2))) struct EventReviewTests {
    static let second: Int64 = 1_000_000_000
    /// 2026-11-20T12:00:00Z: a day the tests name in `from`/`to`.
    static let base: Int64 = 1_795_176_000 * second

    /// Events of two cameras, one that began at the same instant on both (the tie the cursor's
    /// id breaks) and one under way; returns the index's ids newest first, as the listing must be.
    static func addEvents(_ index: RecordingIndex) throws -> [Int64] {
        for (camera, offset) in [(Recording.camera, 0), ("porch", 10), (Recording.camera, 20), ("porch", 20), (Recording.camera, 30), ("porch", 40)] {
            let start = base + Int64(offset) * second
            try index.endMotionEvent(camera: camera, startNanos: start, endNanos: start + 12_340_000_000, peakPercent: 4.56, picture: nil)
        }
        try index.startMotionEvent(camera: Recording.camera, startNanos: base + 50 * second)
        return try index.motionEvents().sorted { ($0.startNanos, $0.id) > ($1.startNanos, $1.id) }.map(\.id)
    }

    private func withServer(
        _ http: HTTPSettings = HTTPSettings(), _ body: @escaping @Sendable (any TestClientProtocol, RecordingIndex, [Int64]) async throws -> Void
    ) async throws {
        let recording = try await Recording.start(segments: 0)
        defer { recording.remove() }
        await recording.stop()
        let ids = try Self.addEvents(recording.keeper.index)
        try await recording.server(http).application().test(.router) { client in try await body(client, recording.keeper.index, ids) }
    }

    private static func ids(_ response: TestResponse) -> [Int64] {
        (response.json()["events"] as? [[String: Any]] ?? []).compactMap { $0["id"] as? Int64 }
    }

    @Test func eventsAreListedNewestFirstAcrossCamerasAndPagedToTheEnd() async throws {
        try await withServer { client, _, ids in
            try #require(ids.count == 7)
            try await client.execute(uri: "/api/v1/events", method: .get) { response in
                #expect(response.status == .ok)
                #expect(Self.ids(response) == ids)
                #expect(response.json()["next"] is NSNull)
                let events = try #require(response.json()["events"] as? [[String: Any]])
                // The one under way: no end, no duration yet.
                #expect(events[0]["camera"] as? String == Recording.camera)
                #expect(events[0]["end"] is NSNull && events[0]["duration_seconds"] is NSNull && events[0]["thumbnail"] is NSNull)
                #expect(events[1]["camera"] as? String == "porch")
                #expect(events[1]["duration_seconds"] as? Double == 12.3)
                #expect(events[1]["peak_area_percent"] as? Double == 4.6)
                #expect(events[1]["reviewed"] as? Bool == false)
                #expect(events[1]["start"] as? String == APITime(timeZone: Configuration.builtInDefault().timeZone).string(Self.base + 40 * Self.second))
            }
            // Two at a time, following `next` until it is null: every event once, in order.
            for limit in [1, 2, 3] {
                var seen: [Int64] = []
                var next: String? = "/api/v1/events?limit=\(limit)"
                var pages = 0
                while let uri = next, pages < 20 {
                    pages += 1
                    let (page, following) = try await client.execute(uri: uri, method: .get) { response in
                        #expect(response.status == .ok, "\(uri)")
                        return (Self.ids(response), response.json()["next"] as? String)
                    }
                    #expect(page.count <= limit)
                    seen += page
                    next = following
                }
                #expect(seen == ids, "limit \(limit)")
                #expect(pages == (ids.count + limit - 1) / limit, "limit \(limit)")
            }
        }
    }

    @Test func eachFilterNarrowsTheListing() async throws {
        try await withServer { client, index, ids in
            let mine = try index.motionEvents(camera: Recording.camera).sorted { $0.startNanos > $1.startNanos }.map(\.id)
            try await client.execute(uri: "/api/v1/events?camera=\(Recording.camera)", method: .get) { response in
                #expect(Self.ids(response) == mine)
            }
            // 12:00:15 to 12:00:25 (UTC): the events that overlap it (ends at +12.34 s).
            try await client.execute(uri: "/api/v1/events?from=2026-11-20T12:00:15Z&to=2026-11-20T12:00:25Z", method: .get) { response in
                #expect(response.status == .ok)
                let listed = Self.ids(response)
                let expected = try index.motionEvents(from: Self.base + 15 * Self.second, to: Self.base + 25 * Self.second)
                    .sorted { ($0.startNanos, $0.id) > ($1.startNanos, $1.id) }.map(\.id)
                #expect(listed == expected && listed.count == 3, "\(listed)")
            }
            // Only the one under way overlaps the next day (it has no end yet).
            try await client.execute(uri: "/api/v1/events?from=2026-11-21T00:00:00Z", method: .get) { #expect(Self.ids($0) == [ids[0]]) }
            // Next pages keep the filters.
            try await client.execute(uri: "/api/v1/events?camera=\(Recording.camera)&unreviewed=true&limit=1", method: .get) { response in
                let next = try #require(response.json()["next"] as? String)
                #expect(next == "/api/v1/events?camera=\(Recording.camera)&unreviewed=true&limit=1&before=\(mine[0])")
            }
            try await client.execute(uri: "/api/v1/events/\(ids[1])/reviewed", method: .post) { #expect($0.status == .ok) }
            try await client.execute(uri: "/api/v1/events/\(ids[2])/reviewed", method: .post) { #expect($0.status == .ok) }
            try await client.execute(uri: "/api/v1/events?unreviewed=true", method: .get) { response in
                #expect(Self.ids(response) == ids.filter { $0 != ids[1] && $0 != ids[2] })
            }
            try await client.execute(uri: "/api/v1/events?unreviewed=false", method: .get) { #expect(Self.ids($0) == ids) }
        }
    }

    @Test func badValuesAre400NamingTheParameter() async throws {
        try await withServer { client, _, ids in
            let bad = [
                ("unreviewed=yes", "unreviewed"), ("unreviewed=", "unreviewed"), ("limit=0", "limit"), ("limit=501", "limit"),
                ("limit=-1", "limit"), ("limit=99999999999999999999999", "limit"), ("limit=%2B5", "limit"), ("limit=05", "limit"),
                ("before=\(ids.max()! + 1000)", "before"), ("before=0", "before"), ("before=abc", "before"),
                ("before=9223372036854775808", "before"), ("from=0001-01-01", "from"), ("to=9999-12-31", "to"),
                ("from=2026-11-21&to=2026-11-20", "from"),
            ]
            for (query, name) in bad {
                try await client.execute(uri: "/api/v1/events?\(query)", method: .get) { response in
                    #expect(response.status == .badRequest, "\(query)")
                    #expect(response.errorMessage?.contains(name) == true, "\(query): \(response.errorMessage ?? "")")
                }
            }
            try await client.execute(uri: "/api/v1/events?camera=nobody", method: .get) { #expect($0.status == .notFound) }
            try await client.execute(uri: "/api/v1/events?camera=%01", method: .get) { #expect($0.status == .notFound) }
            try await client.execute(uri: "/api/v1/events?limit=500&before=\(ids[0])", method: .get) { response in
                #expect(response.status == .ok)
                #expect(Self.ids(response) == Array(ids.dropFirst()))
            }
        }
    }

    @Test func theReviewedFlagIsSetClearedAndKeptInTheIndex() async throws {
        let recording = try await Recording.start(segments: 0)
        defer { recording.remove() }
        await recording.stop()
        let ids = try Self.addEvents(recording.keeper.index)
        // Newest first: ids[2] is synthetic-0's at +30 s, ids[4] its at +20 s, ids[5] the porch's at +10 s.
        let (marked, toggled, fromThePage) = (ids[2], ids[4], ids[5])
        let json: HTTPFields = [.contentType: "application/json"]
        try await recording.server().application().test(.router) { client in
            try await client.execute(uri: "/api/v1/events/\(marked)/reviewed", method: .post) { response in
                #expect(response.status == .ok)
                #expect(response.json()["id"] as? Int64 == marked)
                #expect(response.json()["camera"] as? String == Recording.camera)
                #expect(response.json()["reviewed"] as? Bool == true)
                #expect(response.json()["duration_seconds"] as? Double == 12.3)
            }
            try await client.execute(uri: "/api/v1/events/\(toggled)/reviewed", method: .post, headers: json, body: ByteBuffer(string: #"{"reviewed": true}"#)) {
                #expect($0.json()["reviewed"] as? Bool == true)
            }
            try await client.execute(uri: "/api/v1/events/\(toggled)/reviewed", method: .post, headers: json, body: ByteBuffer(string: #"{"reviewed": false}"#)) {
                #expect($0.status == .ok)
                #expect($0.json()["reviewed"] as? Bool == false)
            }
            for body in [#"{"reviewed": "yes"}"#, #"{"reviewed": null}"#, #"{"reviewed": 1}"#, "{", "[]", "true", "reviewed=1"] {
                try await client.execute(uri: "/api/v1/events/\(toggled)/reviewed", method: .post, headers: json, body: ByteBuffer(string: body)) { response in
                    #expect(response.status == .badRequest, "\(body)")
                    #expect(response.errorMessage?.contains("reviewed") == true)
                }
            }
            try await client.execute(uri: "/api/v1/events/\(toggled)/reviewed", method: .post, body: ByteBuffer(repeating: UInt8(ascii: " "), count: 4096)) {
                #expect($0.status == .contentTooLarge)
                #expect($0.errorMessage?.contains("body") == true, "413 is JSON like every error")
            }
            for id in ["\(ids.max()! + 1)", "0", "abc", "99999999999999999999"] {
                try await client.execute(uri: "/api/v1/events/\(id)/reviewed", method: .post) { response in
                    #expect(response.status == .notFound, "\(id)")
                    #expect(response.errorMessage != nil)
                }
            }
            // Another site's page is refused whatever it sends; this server's own page and curl are not.
            // The test client's requests say `Host: localhost`: another port of it (another
            // program's page on loopback) is another origin, and so is another scheme.
            for headers: HTTPFields in [[.origin: "http://evil.example"], [.origin: "null"], [.secFetchSite: "cross-site"],
                                        [.origin: "http://localhost", .secFetchSite: "cross-site"], [.secFetchSite: "same-site"],
                                        [.origin: "http://localhost:34582"], [.origin: "https://localhost:8443"], [.origin: "http://127.0.0.1"],
                                        [.referer: "http://localhost:34582/attack.html"]] {
                try await client.execute(uri: "/api/v1/events/\(fromThePage)/reviewed", method: .post, headers: headers) { response in
                    #expect(response.status == .forbidden, "\(headers)")
                    #expect(response.errorMessage?.contains("refused") == true)
                }
            }
            try await client.execute(uri: "/api/v1/events/\(fromThePage)/reviewed", method: .post,
                                     headers: [.origin: "http://localhost", .secFetchSite: "same-origin"]) { #expect($0.status == .ok) }
            // A camera's events carry the new fields too.
            try await client.execute(uri: "/api/v1/cameras/\(Recording.camera)/events?from=2026-11-20T00:00:00Z&to=2026-11-20T23:59:59Z", method: .get) { response in
                let events = response.json()["events"] as? [[String: Any]] ?? []
                #expect(events.count == 4)
                #expect(events.allSatisfy { $0["camera"] as? String == Recording.camera && $0["reviewed"] is Bool && $0["duration_seconds"] != nil })
                #expect(events.filter { $0["reviewed"] as? Bool == true }.compactMap { $0["id"] as? Int64 } == [marked])
            }
        }
        // Kept in the file: a new index on the same root reads it back.
        let reopened = try RecordingIndex(root: recording.dir.path)
        #expect(try reopened.motionEvents().filter { $0.reviewedNanos != nil }.map(\.id).sorted() == [marked, fromThePage].sorted())
        #expect(try reopened.motionEventsNewestFirst(unreviewedOnly: true, limit: 100).map(\.id) == ids.filter { $0 != marked && $0 != fromThePage })
    }

    @Test func withATokenMarkingNeedsTheTokenOrTheCookieAndTheSameOrigin() async throws {
        try await withServer(AuthTests.settings(listen: "0.0.0.0:0")) { client, _, ids in
            let uri = "/api/v1/events/\(ids[0])/reviewed"
            try await client.execute(uri: uri, method: .post) { #expect($0.status == .unauthorized) }
            try await client.execute(uri: uri, method: .post, headers: [.cookie: "vigil_session=guess", .origin: "http://localhost"]) { #expect($0.status == .unauthorized) }
            try await client.execute(uri: "/api/v1/events", method: .get) { #expect($0.status == .unauthorized) }
            try await client.execute(uri: uri, method: .post, headers: [.authorization: "Bearer \(AuthTests.token)"]) { response in
                #expect(response.status == .ok)
                #expect(response.json()["reviewed"] as? Bool == true)
            }
            let cookie = try await AuthTests.login(client)
            try await client.execute(uri: uri, method: .post, headers: [.cookie: cookie, .origin: "http://localhost"], body: ByteBuffer(string: #"{"reviewed":false}"#)) { response in
                #expect(response.status == .ok)
                #expect(response.json()["reviewed"] as? Bool == false)
            }
            try await client.execute(uri: uri, method: .post, headers: [.cookie: cookie, .origin: "https://evil.example"]) { #expect($0.status == .forbidden) }
            try await client.execute(uri: uri, method: .post, headers: [.cookie: cookie, .secFetchSite: "cross-site"]) { #expect($0.status == .forbidden) }
            // A form of the page itself may be sent with `Origin: null`: the browser's
            // Sec-Fetch-Site says it is this site's; from anywhere else, null is refused.
            try await client.execute(uri: uri, method: .post, headers: [.cookie: cookie, .origin: "null", .secFetchSite: "same-origin"],
                                     body: ByteBuffer(string: #"{"reviewed":false}"#)) { #expect($0.status == .ok) }
            for site in ["same-site", "cross-site", "none"] {
                try await client.execute(uri: uri, method: .post, headers: [.cookie: cookie, .origin: "null", .secFetchSite: site]) { #expect($0.status == .forbidden, "\(site)") }
            }
            try await client.execute(uri: uri, method: .post, headers: [.cookie: cookie, .origin: "null"]) { #expect($0.status == .forbidden) }
            // The app's manifest and icons need no login (a browser fetches them without the
            // cookie); the page's script does.
            for path in ["/favicon.ico", "/static/manifest.webmanifest", "/static/icon.svg", "/static/icon-192.png"] {
                try await client.execute(uri: path, method: .get) { #expect($0.status == .ok, "\(path)") }
            }
            for path in ["/static/app.js", "/static/icons.js", "/static/icon-192.png/../app.js"] {
                try await client.execute(uri: path, method: .get) { #expect($0.status == .unauthorized, "\(path)") }
            }
            try await client.execute(uri: "/api/v1/events?unreviewed=true", method: .get, headers: [.cookie: cookie, .secFetchSite: "same-origin"]) { response in
                #expect(response.status == .ok)
                #expect(Self.ids(response) == ids)
            }
        }
    }

    /// Over a real socket, with a token: the page served under a LAN name (Host and Origin
    /// name it) may mark; another site's page may not, though the browser sent the cookie.
    @Test func overHTTPThePageOfTheHostItWasSentToMayMarkAndNoOther() async throws {
        let recording = try await Recording.start(segments: 0)
        defer { recording.remove() }
        await recording.stop()
        let ids = try Self.addEvents(recording.keeper.index)
        let dir = try TemporaryDirectory()
        defer { dir.remove() }
        try await recording.server(AuthTests.settings(listen: "0.0.0.0:0")).application().test(.live) { client in
            let port = client.port!
            _ = try await curl(["-s", "-D", dir.path + "/login", "--max-time", "5", "-H", "Origin: http://127.0.0.1:\(port)", "-d", "token=\(AuthTests.token)",
                                "http://127.0.0.1:\(port)/login"], output: "/dev/null")
            let headers = try String(contentsOfFile: dir.path + "/login", encoding: .utf8)
            let cookie = try #require(headers.split(separator: "\r\n").first { $0.hasPrefix("Set-Cookie: ") }?.dropFirst(12).split(separator: ";").first)
            func post(origin: String) async throws -> String {
                try await curl(["-s", "-X", "POST", "-w", "%{http_code}", "--max-time", "5", "-H", "Cookie: \(cookie)",
                                "-H", "Host: vigil.lan:\(port)", "-H", "Origin: \(origin)", "http://127.0.0.1:\(port)/api/v1/events/\(ids[0])/reviewed"],
                               output: dir.path + "/body").written
            }
            let own = try await post(origin: "http://vigil.lan:\(port)")
            let marked = try String(contentsOfFile: dir.path + "/body", encoding: .utf8)
            #expect(own == "200" && marked.contains(#""reviewed":true"#), "\(own) \(marked)")
            let evil = try await post(origin: "http://evil.example")
            let refused = try String(contentsOfFile: dir.path + "/body", encoding: .utf8)
            #expect(evil == "403" && refused.contains("refused"), "\(evil) \(refused)")
        }
    }

    @Test func logoutClearsTheCookieWithOrWithoutAToken() async throws {
        let clearing = "vigil_session=; Path=/; Max-Age=0; HttpOnly; SameSite=Strict"
        for http in [HTTPSettings(), AuthTests.settings(listen: "0.0.0.0:0")] {
            let tokenRequired = http.token != nil
            try await withServer(http) { client, _, _ in
                // Not logged in: still logged out.
                try await client.execute(uri: "/logout", method: .post) { response in
                    #expect(response.status == .seeOther)
                    #expect(response.headers[.location] == "/")
                    #expect(response.headers[.setCookie] == clearing)
                }
                try await client.execute(uri: "/logout", method: .post, headers: [.origin: "http://evil.example"]) { response in
                    #expect(response.status == .forbidden)
                    #expect(response.headers[.setCookie] == nil)
                }
                let auth: HTTPFields = tokenRequired ? [.authorization: "Bearer \(AuthTests.token)"] : [:]
                try await client.execute(uri: "/api/v1/session", method: .get, headers: auth) { response in
                    #expect(response.status == .ok)
                    #expect(response.json()["token_required"] as? Bool == tokenRequired)
                }
                if tokenRequired {
                    try await client.execute(uri: "/api/v1/session", method: .get) { #expect($0.status == .unauthorized) }
                    // Logging in from another site's page is refused before the token is looked at.
                    try await client.execute(uri: "/login", method: .post, headers: [.contentType: "application/x-www-form-urlencoded", .origin: "http://evil.example"],
                                             body: ByteBuffer(string: "token=\(AuthTests.token)")) { response in
                        #expect(response.status == .forbidden)
                        #expect(response.headers[.setCookie] == nil)
                    }
                }
            }
        }
    }

    /// An index that cannot be used is a 500 that says whether reading or writing failed, never
    /// a 404 (the event may well be there) nor an empty list.
    @Test func anIndexThatCannotBeUsedIsAServerError() async throws {
        try await withServer { client, index, ids in
            try index.execute("ALTER TABLE motion_events RENAME TO motion_events_elsewhere")
            try await client.execute(uri: "/api/v1/events", method: .get) { response in
                #expect(response.status == .internalServerError)
                #expect(response.errorMessage?.contains("index cannot be read") == true)
            }
            try await client.execute(uri: "/api/v1/events/\(ids[0])/reviewed", method: .post) { response in
                #expect(response.status == .internalServerError)
                #expect(response.errorMessage?.contains("index cannot be written") == true)
            }
        }
    }

    // MARK: - The index's schema

    /// A version 2 file (motion events without `reviewed_ns`) with events in it.
    private func versionTwoIndex(_ dir: TemporaryDirectory) throws -> [Int64] {
        let index = try RecordingIndex(root: dir.path)
        let ids = try Self.addEvents(index)
        try index.execute("DROP INDEX motion_events_newest; ALTER TABLE motion_events DROP COLUMN reviewed_ns; PRAGMA user_version = 2")
        #expect(try Self.columns(index).contains("reviewed_ns") == false)
        return ids
    }

    private static func columns(_ index: RecordingIndex) throws -> [String] {
        try index.query("PRAGMA table_info(motion_events)", []) { RecordingIndex.text($0, 1) }
    }


    @Test func aVersionTwoIndexWithEventsIsMigrated() throws {
        let dir = try TemporaryDirectory("vigil-index-v2")
        defer { dir.remove() }
        let ids = try versionTwoIndex(dir)
        let index = try RecordingIndex(root: dir.path)
        #expect(try index.userVersion() == RecordingIndex.schemaVersion)
        #expect(try Self.columns(index).contains("reviewed_ns"))
        let plan = try index.query("EXPLAIN QUERY PLAN SELECT id FROM motion_events ORDER BY start_ns DESC, id DESC LIMIT 5", []) { RecordingIndex.text($0, 3) }
        #expect(plan.contains { $0.contains("motion_events_newest") }, "\(plan)")
        let events = try index.motionEventsNewestFirst(limit: 100)
        #expect(events.map(\.id) == ids)
        #expect(events.allSatisfy { $0.reviewedNanos == nil })
        #expect(try index.setMotionEventReviewed(id: ids[0], at: 42))
        #expect(try !index.setMotionEventReviewed(id: ids.max()! + 1, at: 42))
        #expect(try index.motionEvent(id: ids[0])?.reviewedNanos == 42)
        // Marked again: the first time is kept.
        #expect(try index.setMotionEventReviewed(id: ids[0], at: 99))
        #expect(try index.motionEvent(id: ids[0])?.reviewedNanos == 42)
    }

    @Test func aFileThatHasTheColumnUnderAnOlderVersionIsMigratedToo() throws {
        let dir = try TemporaryDirectory("vigil-index-v3-as-v2")
        defer { dir.remove() }
        let ids: [Int64]
        do {
            let index = try RecordingIndex(root: dir.path)
            ids = try Self.addEvents(index)
            #expect(try index.setMotionEventReviewed(id: ids[2], at: 7))
            // As a newer Vigil's file opened again under an older version number.
            try index.execute("PRAGMA user_version = 2")
        }
        let index = try RecordingIndex(root: dir.path)
        #expect(try index.userVersion() == RecordingIndex.schemaVersion)
        #expect(try Self.columns(index).filter { $0 == "reviewed_ns" }.count == 1)
        #expect(try index.motionEvent(id: ids[2])?.reviewedNanos == 7)
    }
}
