@testable import Media
import Testing

/// Names resolved off the calling thread, and the address libavformat is handed instead of a
/// name (it would resolve it on the capture thread, where no stop can cut `getaddrinfo` short).
@Suite struct HostResolverTests {
    private func resolve(_ host: String) throws -> [String] {
        try HostResolver.resolve(host, port: 554, until: NetworkInterrupt.now() + 5_000_000_000, interrupt: NetworkInterrupt()).map(\.numericHost)
    }

    @Test func addressesInDigitsAndNamesFromTheHostsFile() throws {
        #expect(try resolve("127.0.0.1") == ["127.0.0.1"])
        #expect(try resolve("::1") == ["::1"])
        #expect(try resolve("localhost").contains("127.0.0.1"))
    }

    @Test func libavformatIsHandedTheAddressAndHTTPKeepsItsHostName() throws {
        func resolved(_ url: String) throws -> ResolvedURL {
            try ResolvedURL(url, until: NetworkInterrupt.now() + 5_000_000_000, interrupt: NetworkInterrupt())
        }
        let http = try resolved("http://user:se%2Fcret@localhost:8080/video.mjpg?size=1&x=a/b")
        #expect(http.url == "http://user:se%2Fcret@127.0.0.1:8080/video.mjpg?size=1&x=a/b")
        #expect(http.hostHeader == "localhost:8080")
        let rtsp = try resolved("rtsp://localhost/cam")
        #expect(rtsp.url == "rtsp://127.0.0.1/cam" && rtsp.hostHeader == nil)
        // Already in digits: handed on as written.
        for url in ["rtsp://10.0.0.2:554/x", "rtsp://[::1]:8554/x", "http://127.0.0.1/video.mjpg"] {
            let same = try resolved(url)
            #expect(same.url == url && same.hostHeader == nil)
        }
    }

    /// A stream stopped (or a probe given up) before it resolves starts no lookup at all.
    @Test func nothingIsLookedUpOnceGivenUp() {
        let interrupt = NetworkInterrupt(givingUpAt: NetworkInterrupt.now() - 1)
        #expect(interrupt.hasGivenUp && interrupt.isAborted)
        #expect(throws: NetworkFailure.aborted) {
            try HostResolver.resolve("localhost", port: 554, until: .max, interrupt: interrupt)
        }
    }
}
