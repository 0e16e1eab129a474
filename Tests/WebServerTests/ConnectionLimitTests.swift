import CaptureTesting
import Foundation
import Hummingbird
import HummingbirdTesting
import Recorder
import Testing
@testable import WebServer

/// The limits every connection gets, over real sockets, with clients no library would be. Each
/// of these sockets used to stay open for good with no answer (the issue found them still open
/// after 150 s), and enough of them took the descriptors recording needed.
@Suite(.timeLimit(.minutes(2))) struct ConnectionLimitTests {
    /// A server with short timeouts (1 s for a head, 2 s of idleness), so the tests wait little.
    private func withServer(perClient: Int = 64, _ body: @escaping @Sendable (Int, WebServer) async throws -> Void) async throws {
        let recording = try await Recording.start(segments: 0)
        defer { recording.remove() }
        var http = HTTPSettings()
        http.headerTimeoutSeconds = 1
        http.idleTimeoutSeconds = 2
        http.maxConnectionsPerClient = perClient
        let server = recording.server(http)
        try await recording.stopping { try await server.application().test(.live) { client in try await body(client.port!, server) } }
    }

    @Test func socketsThatSendNothingHalfAHeadOrHTTP09AreClosed() async throws {
        try await withServer { port, _ in
            let silent = try RawConnection(port: port)
            defer { silent.close() }
            let half = try RawConnection(port: port)
            defer { half.close() }
            await half.send("GET /healthz HTTP/1.1\r\nHost: 127.0.0.1\r\n")
            let old = try RawConnection(port: port)
            defer { old.close() }
            await old.send("GET /healthz\r\n")
            let (nothing, silentClosed) = await silent.readAll(seconds: 30)
            #expect(silentClosed && nothing.isEmpty, "a socket that sent nothing is closed without a word: \(nothing)")
            let (timedOut, halfClosed) = await half.readAll(seconds: 30)
            #expect(halfClosed && timedOut.hasPrefix("HTTP/1.1 408"), "\(timedOut)")
            #expect(timedOut.contains("header_timeout_seconds"))
            let (answer, oldClosed) = await old.readAll(seconds: 30)
            #expect(oldClosed && (answer.hasPrefix("HTTP/1.1 400") || answer.hasPrefix("HTTP/1.1 408")), "\(answer)")
        }
    }

    @Test func garbageIs400AndAHugeHeadIs431() async throws {
        try await withServer { port, _ in
            let garbage = try RawConnection(port: port)
            defer { garbage.close() }
            await garbage.send("\u{01}\u{02}\u{7f} this is not HTTP \u{00}\r\n\r\n")
            let (answer, closed) = await garbage.readAll(seconds: 30)
            #expect(closed && answer.hasPrefix("HTTP/1.1 400") && answer.contains("\"error\""), "\(answer)")

            let huge = try RawConnection(port: port)
            defer { huge.close() }
            await huge.send("GET /healthz HTTP/1.1\r\nHost: 127.0.0.1\r\nX-Filler: \(String(repeating: "a", count: 20_000))\r\n\r\n")
            let (tooLarge, hugeClosed) = await huge.readAll(seconds: 30)
            #expect(hugeClosed && tooLarge.hasPrefix("HTTP/1.1 431"), "\(tooLarge.prefix(200))")

            // After a good request on the same connection, garbage is Hummingbird's to answer: 400 too.
            let later = try RawConnection(port: port)
            defer { later.close() }
            await later.send("GET /healthz HTTP/1.1\r\nHost: 127.0.0.1\r\n\r\n")
            let first = await later.read(until: "{\"status\":\"ok\"}")
            #expect(first.hasPrefix("HTTP/1.1 200"), "\(first)")
            await later.send("GARBAGE \u{01}\r\n\r\n")
            let (second, laterClosed) = await later.readAll(seconds: 30)
            #expect(laterClosed && second.hasPrefix("HTTP/1.1 400"), "\(second)")
        }
    }

    @Test func oneClientAddressHoldsAtMostItsShare() async throws {
        try await withServer(perClient: 3) { port, _ in
            // Four connections from one address, each asking at once: which of them the server
            // counts first is the event loops' choice, so the test asks only that three are
            // served and one is refused with a reason. They come from 127.0.0.3: the test
            // framework's own client connects from 127.0.0.1 whenever its task runs, and would
            // take one of their places at random.
            let client = "127.0.0.3"
            let connections = try (0..<4).map { _ in try RawConnection(port: port, source: client) }
            for connection in connections { await connection.send("GET /healthz HTTP/1.1\r\nHost: 127.0.0.1\r\n\r\n") }
            var answers: [String] = []
            for connection in connections { answers.append(await connection.read(until: "\r\n\r\n", seconds: 30)) }
            let refused = answers.filter { $0.hasPrefix("HTTP/1.1 503") }
            #expect(answers.filter { $0.hasPrefix("HTTP/1.1 200") }.count == 3 && refused.count == 1, "\(answers)")
            let refusedIndex = answers.firstIndex { $0.hasPrefix("HTTP/1.1 503") } ?? 0
            let reason = await connections[refusedIndex].readAll(seconds: 30).text
            connections[refusedIndex].close()
            #expect(((refused.first ?? "") + reason).contains("too many connections from \(client) (max_connections_per_client = 3)"), "\(answers) \(reason)")
            let held = connections.indices.filter { $0 != refusedIndex }.map { connections[$0] }
            // Another address is not affected.
            let other = try RawConnection(port: port, source: "127.0.0.2")
            defer { other.close() }
            await other.send("GET /healthz HTTP/1.1\r\nHost: 127.0.0.1\r\nConnection: close\r\n\r\n")
            let (served, _) = await other.readAll(seconds: 30)
            #expect(served.hasPrefix("HTTP/1.1 200"), "\(served)")
            for connection in held { connection.close() }
            // Their places come back as the server sees them close.
            var again = ""
            let answered = try await waitUntil(seconds: 30) {
                let retry = try RawConnection(port: port, source: client)
                await retry.send("GET /healthz HTTP/1.1\r\nHost: 127.0.0.1\r\nConnection: close\r\n\r\n")
                again = await retry.readAll(seconds: 30).text
                retry.close()
                return again.hasPrefix("HTTP/1.1 200")
            }
            #expect(answered, "\(again)")
        }
    }

    @Test func aBodyThatTricklesOrIsTooLargeEndsTheConnection() async throws {
        try await withServer { port, _ in
            let trickle = try RawConnection(port: port)
            defer { trickle.close() }
            await trickle.send("GET /healthz HTTP/1.1\r\nHost: 127.0.0.1\r\nContent-Length: 1000000\r\n\r\n")
            // A byte every 200 ms keeps an idle timer from firing; the body's own deadline does not wait for it.
            let feeding = Task {
                for _ in 0..<150 where !Task.isCancelled {
                    await trickle.send("x")
                    try? await Task.sleep(for: .milliseconds(200))
                }
            }
            let (answer, closed) = await trickle.readAll(seconds: 30)
            feeding.cancel()
            #expect(closed && answer.hasPrefix("HTTP/1.1 200"), "\(answer)")

            let large = try RawConnection(port: port)
            defer { large.close() }
            await large.send("GET /healthz HTTP/1.1\r\nHost: 127.0.0.1\r\nContent-Length: 200000\r\n\r\n" + String(repeating: "y", count: 200_000))
            let (_, largeClosed) = await large.readAll(seconds: 30)
            #expect(largeClosed, "a 200 KB body to a route that takes none")
        }
    }
}
