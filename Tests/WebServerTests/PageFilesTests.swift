import CaptureTesting
import Foundation
import Hummingbird
import HummingbirdTesting
import Testing
@testable import WebServer

/// The page's files are found where a build puts them and where the README installs them; when
/// they are missing the page says so and where it looked, and the API is unaffected. The page is
/// installable (manifest, icons, favicon) and stays small.
@Suite(.timeLimit(.minutes(2))) struct PageFilesTests {
    /// The files beside the test bundle, where the build put them.
    static var built: PageFiles { PageFiles.load(executable: URL(fileURLWithPath: CommandLine.arguments[0])) }

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

    /// Everything the page itself loads (all `PageFiles` serves but the API's description) is
    /// at most 150 KB, so a phone on a weak link opens it quickly.
    @Test func thePagesOwnFilesStayWithin150KB() throws {
        let limit = 150 * 1024
        var total = 0
        let files = Self.built
        #expect(files.names.contains("manifest.webmanifest") && files.names.contains("icon-512.png"), "\(files.names)")
        for name in files.names where name != "openapi.yaml" {
            let length = try #require(try files.response(name).body.contentLength, "\(name)")
            #expect(length > 0, "\(name)")
            total += length
        }
        print("the page's own files: \(total) bytes of \(limit)")
        #expect(total <= limit)
    }

    /// The manifest parses, names the page and its icons, and each PNG icon is served as a PNG of
    /// the size the manifest states; `/favicon.ico` answers too; the page links them.
    @Test func theManifestItsIconsAndTheFaviconAreServed() async throws {
        let recording = try await Recording.start(segments: 0)
        defer { recording.remove() }
        try await recording.stopping { try await recording.server().application(page: Self.built).test(.router) { client in
            let manifest = try await client.execute(uri: "/static/manifest.webmanifest", method: .get) { response in
                #expect(response.status == .ok)
                #expect(response.headers[.contentType] == "application/manifest+json")
                return try #require(try JSONSerialization.jsonObject(with: Data(response.body.readableBytesView)) as? [String: Any])
            }
            #expect(manifest["name"] as? String == "Vigil")
            #expect(manifest["short_name"] is String && manifest["background_color"] is String && manifest["theme_color"] is String)
            #expect(manifest["start_url"] as? String == "/" && manifest["scope"] as? String == "/")
            #expect(manifest["display"] as? String == "standalone")
            let icons = try #require(manifest["icons"] as? [[String: Any]])
            var sizes = Set<Int>()
            for icon in icons {
                let src = try #require(icon["src"] as? String)
                let type = try #require(icon["type"] as? String)
                let width = try await client.execute(uri: src, method: .get) { response -> Int? in
                    #expect(response.status == .ok, "\(src)")
                    #expect(response.headers[.contentType] == type, "\(src)")
                    let body = Data(response.body.readableBytesView)
                    if type == "image/png" {
                        let size = try #require(Self.pngSize(body), "\(src) is not a PNG")
                        #expect(icon["sizes"] as? String == "\(size.width)x\(size.height)", "\(src)")
                        return size.width
                    }
                    #expect(type == "image/svg+xml" && String(decoding: body, as: UTF8.self).hasPrefix("<svg"), "\(src)")
                    return nil
                }
                if let width { sizes.insert(width) }
            }
            #expect(sizes == [192, 512])
            try await client.execute(uri: "/favicon.ico", method: .get) { response in
                #expect(response.status == .ok)
                #expect(response.headers[.contentType] == "image/png")
                #expect(Self.pngSize(Data(response.body.readableBytesView))?.width == 192)
            }
            try await client.execute(uri: "/", method: .get) { response in
                let html = String(buffer: response.body)
                for link in [#"<link rel="manifest" href="/static/manifest.webmanifest">"#, #"<link rel="icon" href="/static/icon.svg" type="image/svg+xml">"#,
                             #"<link rel="apple-touch-icon" href="/static/icon-192.png">"#, #"<meta name="theme-color""#] {
                    #expect(html.contains(link), "\(link)")
                }
            }
        } }
    }

    /// Safari does not take 'self' to cover ws: and wss:, so the page's policy names the host and
    /// port it was asked under for live view's WebSocket.
    @Test func thePagesPolicyLetsItsWebSocketConnectToTheHostItCameFrom() async throws {
        let recording = try await Recording.start(segments: 0)
        defer { recording.remove() }
        let dir = try TemporaryDirectory()
        defer { dir.remove() }
        try await recording.stopping { try await recording.server().application(page: Self.built).test(.live) { client in
            let port = client.port!
            for host in ["127.0.0.1:\(port)", "localhost:\(port)", "[::1]:\(port)"] {
                _ = try await curl(["-s", "-D", dir.path + "/head", "-H", "Host: \(host)", "http://127.0.0.1:\(port)/"], output: dir.path + "/body")
                let head = try String(contentsOfFile: dir.path + "/head", encoding: .utf8).lowercased()
                #expect(head.contains("connect-src 'self' ws://\(host) wss://\(host)"), "\(head)")
            }
        } }
        #expect(try Self.built.response("index.html").headers[.contentSecurityPolicy]?.contains("connect-src") == false)
    }

    /// Width and height from a PNG's IHDR chunk; nil when the bytes do not start as a PNG does.
    static func pngSize(_ data: Data) -> (width: Int, height: Int)? {
        let bytes = [UInt8](data.prefix(24))
        guard bytes.count == 24, bytes.prefix(8).elementsEqual([0x89, 0x50, 0x4E, 0x47, 0x0D, 0x0A, 0x1A, 0x0A]),
              bytes[12..<16].elementsEqual(Array("IHDR".utf8)) else { return nil }
        func number(_ at: Int) -> Int { bytes[at..<(at + 4)].reduce(0) { $0 << 8 | Int($1) } }
        return (number(16), number(20))
    }
}
