import CaptureTesting
import Foundation
import Hummingbird
import HummingbirdTesting
import Recorder
import Testing
@testable import WebServer

/// docs/openapi.yaml is what the server serves at /api/v1/openapi.yaml, and it describes every
/// route the server has (and no other): a route added without its description fails here. What
/// the routes answer is checked against it by schemathesis (`HostileClientsTests`).
@Suite struct OpenAPITests {
    private static let repository = URL(fileURLWithPath: #filePath).deletingLastPathComponent().deletingLastPathComponent().deletingLastPathComponent()

    /// "METHOD /path/{param}" for every route registered in Sources/WebServer (`:name` → `{name}`).
    private func routesInTheCode() throws -> Set<String> {
        let folder = Self.repository.appendingPathComponent("Sources/WebServer")
        let files = FileManager.default.enumerator(atPath: folder.path)?.compactMap { $0 as? String }.filter { $0.hasSuffix(".swift") } ?? []
        var routes = Set<String>()
        let call = /router\.(get|head|post|ws)\("([^"]+)"/
        let table = /\("(\/api\/v1\/[^"]+)", "[^"]+", Self\.recording|\("(\/api\/v1\/events\/:id\/thumbnail\.jpg)"/
        for file in files {
            let text = try String(contentsOf: folder.appendingPathComponent(file), encoding: .utf8)
            for match in text.matches(of: call) {
                let method = match.1 == "ws" ? "get" : String(match.1)
                routes.insert("\(method) \(Self.openAPIPath(String(match.2)))")
            }
            // FileRoutes lists its paths in a table and adds GET and HEAD for each.
            for match in text.matches(of: table) {
                let path = Self.openAPIPath(String(match.1 ?? match.2 ?? ""))
                routes.formUnion(["get \(path)", "head \(path)"])
            }
        }
        return routes
    }

    private static func openAPIPath(_ path: String) -> String {
        path.split(separator: "/", omittingEmptySubsequences: false).map { part in
            if part.hasPrefix(":") { return "{\(part.dropFirst())}" }
            return String(part)
        }.joined(separator: "/")
    }

    /// "METHOD /path" for every operation of the description (read as the YAML it is written in:
    /// paths at two spaces, methods at four).
    private func operationsInTheDescription(_ yaml: String) -> Set<String> {
        var operations = Set<String>()
        var path: String?
        for line in yaml.split(separator: "\n", omittingEmptySubsequences: false) {
            if line.hasPrefix("components:") { break }
            if line.hasPrefix("  /"), line.hasSuffix(":") { path = String(line.dropFirst(2).dropLast()) }
            let methods = ["get", "head", "post", "put", "delete", "patch", "options"]
            if let path, line.hasPrefix("    "), !line.hasPrefix("     "), let method = methods.first(where: { line == "    \($0):" }) {
                operations.insert("\(method) \(path)")
            }
        }
        return operations
    }

    @Test func theDescriptionIsServedAndDescribesEveryRouteAndNoOther() async throws {
        let file = Self.repository.appendingPathComponent("docs/openapi.yaml")
        let yaml = try String(contentsOf: file, encoding: .utf8)
        #expect(yaml.hasPrefix("openapi: 3.1"))
        let inCode = try routesInTheCode()
        try #require(inCode.count > 15, "the route scan found only \(inCode.sorted())")
        let described = operationsInTheDescription(yaml)
        #expect(inCode.subtracting(described).isEmpty, "routes without a description: \(inCode.subtracting(described).sorted())")
        #expect(described.subtracting(inCode).isEmpty, "described, but no such route: \(described.subtracting(inCode).sorted())")
        let recording = try await Recording.start(segments: 0)
        defer { recording.remove() }
        try await recording.stopping { try await recording.server().application().test(.router) { client in
            try await client.execute(uri: "/api/v1/openapi.yaml", method: .get) { response in
                #expect(response.status == .ok)
                #expect(response.headers[.contentType]?.hasPrefix("application/yaml") == true)
                #expect(String(buffer: response.body) == yaml, "the served description is not docs/openapi.yaml")
            }
        } }
    }
}
