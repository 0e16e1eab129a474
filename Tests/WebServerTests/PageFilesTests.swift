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
        for name in PageFiles.required + ["day.js", "icon.png"] { try Data("contents of \(name)".utf8).write(to: page.appendingPathComponent(name)) }
        // Not served: an unknown type, a hidden file.
        for name in ["notes.txt", ".app.js"] { try Data("secret".utf8).write(to: page.appendingPathComponent(name)) }

        let files = PageFiles.load(executable: root.appendingPathComponent("bin/vigil"))
        let index = try files.response("index.html")
        #expect(index.status == .ok)
        #expect(index.headers[.contentType] == "text/html; charset=utf-8")
        #expect(index.headers[.contentSecurityPolicy]?.contains("default-src 'self'") == true)
        #expect(try files.response("icon.png").headers[.contentType] == "image/png")
        #expect(files.names == ["app.js", "day.js", "icon.png", "index.html", "openapi.yaml", "style.css"])
        for name in ["../../etc/passwd", "notes.txt", ".app.js", "missing.js"] {
            #expect(throws: APIError.self, "\(name)") { try files.response(name) }
        }
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
        #expect(files.names.contains("day.js"))
        for name in PageFiles.required + files.names { #expect(try files.response(name).status == .ok, "\(name)") }
    }
}
