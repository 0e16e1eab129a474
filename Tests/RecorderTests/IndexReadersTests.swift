import CaptureTesting
import Foundation
@testable import Recorder
import Synchronization
import Testing

/// Listings run on read-only connections of their own (WAL): a slow listing (the web server's,
/// a command's) never holds up indexing, and a listing sees what was committed when it began.
private final class Flag: Sendable { let value = Atomic<Bool>(false) }

@Suite(.timeLimit(.minutes(1))) struct IndexReadersTests {
    private func entry(_ n: Int) -> RecordingIndex.Entry {
        RecordingIndex.Entry(
            kind: .segment, camera: "cam", path: "cam/video/2026-11-26/cam-\(n).mp4", startNanos: Int64(n) * 1_000_000_000,
            endNanos: Int64(n + 1) * 1_000_000_000, frames: 10, bytes: 1000, codec: "h264", width: 64, height: 48, state: .complete)
    }

    @Test func indexingGoesOnWhileAListingIsHalfwayThrough() async throws {
        let dir = try TemporaryDirectory()
        defer { dir.remove() }
        let index = try RecordingIndex(root: dir.path)
        for n in 0..<3 { try index.put(entry(n)) }
        let listingStarted = DispatchSemaphore(value: 0)
        let release = DispatchSemaphore(value: 0)
        let listingEnded = Flag()
        let pastFirstRow = Flag()
        let listing = Thread {
            // Stops at its first row until released (or 20 s, so a broken index cannot hang the suite).
            let rows = try? index.read("SELECT path FROM recordings ORDER BY start_ns", []) { _ in
                if !pastFirstRow.value.exchange(true, ordering: .sequentiallyConsistent) {
                    listingStarted.signal()
                    _ = release.wait(timeout: .now() + 20)
                }
                return 1
            }
            #expect(rows?.count == 3, "the listing sees the 3 rows committed when it began, not the one added meanwhile")
            listingEnded.value.store(true, ordering: .sequentiallyConsistent)
        }
        listing.start()
        listingStarted.wait()
        // With one shared connection this put waited for the listing (20 s, then failed below).
        try index.put(entry(3))
        let endedFirst = listingEnded.value.load(ordering: .sequentiallyConsistent)
        #expect(!endedFirst, "the write finished while the listing was still halfway through")
        release.signal()
        #expect(await waitUntil(seconds: 30) { listingEnded.value.load(ordering: .sequentiallyConsistent) }, "the listing never ended")
        #expect(try index.entries().count == 4)
    }

    @Test func anIndexInMemoryListsWhatItHolds() throws {
        let index = try RecordingIndex.inMemory(root: "/nonexistent")
        try index.put(entry(0))
        #expect(try index.entries().map(\.path) == [entry(0).path])
        #expect(try index.cameras() == ["cam"])
    }
}
