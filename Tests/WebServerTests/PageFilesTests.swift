import Foundation
import Testing
@testable import WebServer

/// The page's files are found where a build puts them and where the README installs them; when
/// they are missing the page says so and where it looked, and the API is unaffected.
struct PageFilesTests {
    @Test func anInstalledVigilFindsThePageUnderShare() throws {
        let root = FileManager.default.temporaryDirectory.appendingPathComponent("vigil-page-\(UUID().uuidString)")
        defer { try? FileManager.default.removeItem(at: root) }
        let page = root.appendingPathComponent("share/vigil/page")
        try FileManager.default.createDirectory(at: page, withIntermediateDirectories: true)
        try FileManager.default.createDirectory(at: root.appendingPathComponent("bin"), withIntermediateDirectories: true)
        for name in PageFiles.types.keys { try Data("contents of \(name)".utf8).write(to: page.appendingPathComponent(name)) }

        let files = PageFiles.load(executable: root.appendingPathComponent("bin/vigil"))
        let index = try files.response("index.html")
        #expect(index.status == .ok)
        #expect(index.headers[.contentType] == "text/html; charset=utf-8")
        #expect(index.headers[.contentSecurityPolicy]?.contains("default-src 'self'") == true)
        #expect(throws: APIError.self) { try files.response("../../etc/passwd") }
    }

    @Test func missingFilesAreA500ThatSaysWhereItLooked() throws {
        let nowhere = FileManager.default.temporaryDirectory.appendingPathComponent("vigil-nopage-\(UUID().uuidString)/bin/vigil")
        let files = PageFiles.load(executable: nowhere)
        do {
            _ = try files.response("index.html")
            Issue.record("a page without files answered")
        } catch {
            #expect(error.status == .internalServerError)
            #expect(error.message.contains("share/vigil/page") && error.message.contains("README"), "\(error.message)")
        }
    }

    @Test func theBuiltVigilHasItsPageBesideIt() throws {
        // The test bundle sits where the build put vigil and its resources.
        let files = PageFiles.load(executable: URL(fileURLWithPath: CommandLine.arguments[0]))
        for name in PageFiles.types.keys { #expect(try files.response(name).status == .ok, "\(name)") }
    }
}
