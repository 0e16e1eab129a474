import CaptureTesting
import Foundation
import Hummingbird
import HummingbirdTesting
import Recorder
import Testing
@testable import WebServer

/// A known path asked with a method it does not take is 405 with `Allow` (schemathesis found
/// `TRACE` answered 404); an unknown path stays 404.
@Suite(.timeLimit(.minutes(2))) struct MethodNotAllowedTests {
    @Test func knownPathsSayWhichMethodsTheyTake() async throws {
        let recording = try await Recording.start(segments: 0)
        defer { recording.remove() }
        try await recording.stopping {
            try await recording.server().application().test(.router) { client in
                let cases: [(HTTPRequest.Method, String, String)] = [
                    (.trace, "/", "GET, HEAD"), (.delete, "/api/v1/recordings/1/file", "GET, HEAD"), (.post, "/api/v1/cameras", "GET"),
                    (.put, "/api/v1/events/1/reviewed", "POST"), (.get, "/logout", "POST"), (.patch, "/static/app.js", "GET, HEAD"),
                    (.options, "/api/v1/cameras/porch/live", "GET"),
                ]
                for (method, path, allow) in cases {
                    try await client.execute(uri: path, method: method) { response in
                        #expect(response.status == .methodNotAllowed, "\(method) \(path)")
                        #expect(response.headers[.allow] == allow, "\(method) \(path)")
                        #expect(response.errorMessage?.contains(allow) == true, "\(method) \(path)")
                    }
                }
                for (method, path) in [(HTTPRequest.Method.get, "/nope"), (.trace, "/api/v1/nope"), (.get, "/api/v1/recordings/1/file/more")] {
                    try await client.execute(uri: path, method: method) { #expect($0.status == .notFound, "\(method) \(path)") }
                }
            }
        }
    }
}
