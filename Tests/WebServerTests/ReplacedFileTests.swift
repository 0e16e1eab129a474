import CaptureTesting
import Foundation
import HummingbirdTesting
import Recorder
import Synchronization
import Testing
@testable import WebServer

/// A picture replaced while it is asked for (a motion event's picture is renamed over every few
/// seconds while the event runs) is served whole: the old bytes or the new, each with its own
/// length and tag, never the new file cut at the old size.
@Suite(.timeLimit(.minutes(2))) struct ReplacedFileTests {
    @Test func aFileRenamedOverWhileServedIsServedWhole() async throws {
        let recording = try await Recording.start(segments: 1)
        await recording.stop()
        defer { recording.remove() }
        let still = try #require(try recording.keeper.index.entries(camera: Recording.camera, kind: .still, states: [.complete]).first)
        let path = recording.dir.path + "/" + still.path
        let versions = [Data(repeating: 0xAA, count: 1_000), Data(repeating: 0xBB, count: 300_000)]
        let stop = Atomic<Bool>(false)
        // Renames one version, then the other, over the still, as fast as it can.
        let replacer = Thread {
            var turn = 0
            while !stop.load(ordering: .relaxed) {
                let staged = path + ".partial"
                try? versions[turn % 2].write(to: URL(fileURLWithPath: staged))
                rename(staged, path)
                turn += 1
            }
        }
        replacer.start()
        defer { stop.store(true, ordering: .relaxed) }
        let seen = Mutex(Set<Int>())
        try await recording.server().application().test(.router) { client in
            for _ in 0..<300 {
                try await client.execute(uri: "/api/v1/stills/\(still.id)", method: .get) { response in
                    #expect(response.status == .ok)
                    let body = Data(response.body.readableBytesView)
                    #expect(versions.contains(body), "a body of \(body.count) bytes that is neither version")
                    #expect(response.headers[.contentLength] == String(body.count))
                    seen.withLock { _ = $0.insert(body.count) }
                }
            }
        }
        let sizes = seen.withLock { $0.sorted() }
        #expect(sizes.count == 2, "both versions were served: \(sizes)")
    }
}
