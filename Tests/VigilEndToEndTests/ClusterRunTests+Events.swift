import CaptureTesting
import Foundation
import Glibc
import Recorder
import Testing

/// Every node's motion events on any node's page: listed from the catalogue with their node,
/// their pictures served by the node that recorded them, and marked reviewed from any page into
/// the recording node's own index.
extension ClusterRunTests {
    /// Two finished events of `camera` with pictures, written into `holder`'s index (as a second
    /// process may; its journal's triggers note them): RTSP copy cameras detect no motion.
    func addEvents(site: LeasedSite, holder: String, camera: String, picture: [UInt8]) throws -> [(start: Int64, picture: String)] {
        let root = site.nodes[holder]!.dir + "/data"
        try FileManager.default.createDirectory(atPath: root + "/\(camera)/events", withIntermediateDirectories: true)
        let index = try RecordingIndex(root: root)
        let now = Int64(Date().timeIntervalSince1970 * 1e9)
        return try [12, 6].enumerated().map { n, ago in
            let path = "\(camera)/events/\(camera)-event-\(n).jpg"
            try Data(picture).write(to: URL(fileURLWithPath: root + "/" + path))
            let start = now - Int64(ago) * 1_000_000_000
            try index.startMotionEvent(camera: camera, startNanos: start)
            try index.endMotionEvent(camera: camera, startNanos: start, endNanos: start + 2_000_000_000, peakPercent: 20, picture: path)
            return (start, path)
        }
    }

    /// `page`'s `/api/v1/events`, one event a page, followed through `next` to the end.
    func everyEvent(site: LeasedSite, page: String) -> [[String: Any]]? {
        var listed: [[String: Any]] = [], path: String? = "/api/v1/events?limit=1"
        while let next = path {
            guard let answer = site.api(page, next), answer["partial"] as? Bool == false, listed.count < 100 else { return nil }
            listed += answer["events"] as? [[String: Any]] ?? []
            path = answer["next"] as? String
        }
        return listed
    }

    /// The review listing of `page` has `holder`'s two events (and no event twice), their
    /// pictures are `holder`'s files, and a mark made through `page` lands in `holder`'s index
    /// and shows on `page`; undone the same way. Returns the catalogue's ids, newest first.
    func expectEventsOfAnotherNode(site: LeasedSite, page: String, holder: String, camera: String, picture: [UInt8]) async throws -> [Int] {
        let added = try addEvents(site: site, holder: holder, camera: camera, picture: picture)
        var listed: [[String: Any]] = []
        let found = await waitUntil(seconds: 20) {
            listed = everyEvent(site: site, page: page) ?? []
            return listed.filter { $0["node"] as? String == holder }.count == 2
        }
        try #require(found, "\(page)'s review listing: \(listed)")
        let ids = listed.compactMap { $0["id"] as? Int }
        #expect(Set(ids).count == ids.count, "an event listed twice across pages: \(ids)")
        let theirs = listed.filter { $0["node"] as? String == holder }
        #expect(theirs.allSatisfy { $0["camera"] as? String == camera && ($0["review_url"] as? String)?.hasPrefix("/api/v1/cluster/events/") == true })
        // The camera's day on this node: the holder's events, oldest first.
        let day = site.api(page, "/api/v1/cameras/\(camera)/events?from=2000-01-01T00:00:00Z&to=2100-01-01T00:00:00Z")
        let dayIDs = (day?["events"] as? [[String: Any]] ?? []).filter { $0["node"] as? String == holder }.compactMap { $0["id"] as? Int }
        #expect(day?["partial"] as? Bool == false && dayIDs == theirs.compactMap { $0["id"] as? Int }.reversed(), "\(page)'s day of \(camera): \(day ?? [:])")
        // Newest first: the event of 6 s ago, then 12 s ago; its picture is the holder's file.
        for event in theirs {
            let thumbnail = try #require(event["thumbnail"] as? String)
            let answer = try #require(httpGetBytes(port: site.ports[page]!, thumbnail))
            #expect(String(decoding: answer.prefix(12), as: UTF8.self) == "HTTP/1.1 200" && Array(answer.suffix(picture.count)) == picture,
                    "\(thumbnail): \(String(decoding: answer.prefix(200), as: UTF8.self))")
        }
        // On the holder's own page the same ids, its own routes (they need no catalogue).
        let own = (everyEvent(site: site, page: holder) ?? []).filter { $0["node"] as? String == holder }
        #expect(own.compactMap { $0["id"] as? Int } == theirs.compactMap { $0["id"] as? Int }, "\(own)")
        #expect(own.allSatisfy { ($0["review_url"] as? String)?.hasPrefix("/api/v1/events/") == true }, "\(own)")
        let first = try #require(theirs.first), id = try #require(first["id"] as? Int), start = try #require(added.last?.start)
        let index = try RecordingIndex(root: site.nodes[holder]!.dir + "/data")
        for reviewed in [true, false] {
            let marked = post(port: site.ports[page]!, "/api/v1/cluster/events/\(id)/reviewed", body: "{\"reviewed\": \(reviewed)}")
            #expect(marked.contains("\"reviewed\":\(reviewed)"), "marking \(id) through \(page): \(marked)")
            #expect((try index.motionEvent(camera: camera, startNanos: start)?.reviewedNanos != nil) == reviewed, "\(holder)'s index")
            let shown = everyEvent(site: site, page: page)?.first { $0["id"] as? Int == id }
            #expect(shown?["reviewed"] as? Bool == reviewed, "\(page) lists it as \(shown ?? [:])")
        }
        // Written in the trail of the node the person used, not again by the holder.
        var trail: [[String: Any]] = []
        let written = await waitUntil(seconds: 15) {
            trail = site.api(page, "/api/v1/audit?from=2000-01-01T00:00:00Z")?["entries"] as? [[String: Any]] ?? []
            return trail.filter { $0["action"] as? String == "mark" && $0["subject"] as? String == "site event \(id)" }.count == 2
        }
        #expect(written, "\(page)'s trail: \(trail.suffix(5))")
        let holderTrail = (site.api(holder, "/api/v1/audit?from=2000-01-01T00:00:00Z")?["entries"] as? [[String: Any]] ?? [])
        #expect(!holderTrail.contains { ($0["subject"] as? String)?.hasPrefix("site event") == true }, "\(holderTrail.suffix(5))")
        return theirs.compactMap { $0["id"] as? Int }
    }

    /// A node that does not answer: a mark of its event is kept in the catalogue, for every page.
    func expectAMarkOfADeadNodesEvent(site: LeasedSite, page: String, holder: String, id: Int) async {
        let process = site.nodes[holder]!.process
        kill(process.processIdentifier, SIGKILL)
        _ = await waitForExit(process, seconds: 10)
        let marked = post(port: site.ports[page]!, "/api/v1/cluster/events/\(id)/reviewed", body: "{\"reviewed\": true}")
        #expect(marked.contains("\"reviewed\":true"), "marking \(id) of \(holder), which is down: \(marked)")
        #expect(everyEvent(site: site, page: page)?.first { $0["id"] as? Int == id }?["reviewed"] as? Bool == true)
    }

    /// The body of a JSON POST to a loopback port (curl; no Origin, as a script sends).
    func post(port: Int, _ path: String, body: String) -> String {
        RecordingInspector.run("/usr/bin/curl", ["-sS", "-X", "POST", "-H", "Content-Type: application/json", "-d", body, "http://127.0.0.1:\(port)\(path)"]).output
    }
}

extension LeasedSite {
    /// `vigil cluster verify` over everything the catalogue holds: its overlaps without a
    /// hand-over (-1 when it could not say), its hand-overs, and what it printed.
    func verify() -> (overlaps: Int, handOvers: Int, output: String) {
        let run = VigilBinary.run(["cluster", "verify", "--config", file, "--from", "2000-01-01", "--to", "2100-01-01", "--json"])
        guard let json = try? JSONSerialization.jsonObject(with: Data(run.output.utf8)) as? [String: Any],
              let overlaps = json["overlaps"] as? Int, let handOvers = json["handovers"] as? Int,
              (overlaps == 0) == (run.status == 0) else { return (-1, 0, run.output + run.errorOutput) }
        print("cluster verify: \(handOvers) hand-over(s), \(overlaps) other overlap(s)")
        return (overlaps, handOvers, run.output + run.errorOutput)
    }
}
