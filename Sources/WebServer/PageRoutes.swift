import Foundation
import Hummingbird

/// The page: `GET /` and its script, style, manifest and icons under `/static/`, `/favicon.ico`
/// (the 192-pixel icon: browsers ask for it whatever the page links), and the API's
/// description (`/api/v1/openapi.yaml`). Plain files (Sources/WebServer/Page,
/// no build step), read once when the server starts and served from memory.
struct PageRoutes: Sendable {
    let files: PageFiles

    func add(to router: Router<WebRequestContext>) {
        router.get("/") { request, _ in try files.response("index.html", webSocketAuthority: Self.authority(request)) }
        router.get("/api/v1/openapi.yaml") { _, _ in try files.response("openapi.yaml") }
        router.get("/favicon.ico") { _, _ in try files.response("icon-192.png") }
        router.get("/static/{name}") { _, context in
            try files.response(context.parameters.require("name"))
        }
        // HEAD: the headers a GET would get (link checkers and monitors ask it), no body.
        router.head("/") { request, _ in try files.response("index.html", webSocketAuthority: Self.authority(request)).withoutBody() }
        router.head("/static/{name}") { _, context in
            try files.response(context.parameters.require("name")).withoutBody()
        }
    }

    /// The `Host` the page was asked under, when it is a host and port and nothing else (it goes
    /// into a header): live view's WebSocket goes to it.
    static func authority(_ request: Request) -> String? {
        guard let authority = request.head.authority, AllowedHosts.host(ofAuthority: authority) != nil,
              authority.allSatisfy({ $0.isASCII && ($0.isLetter || $0.isNumber || ".-:[]".contains($0)) }) else { return nil }
        return authority
    }
}

/// The page's files by name: every file of the page's folder with a known type (so a view's
/// new script or an icon needs no change here), read once.
struct PageFiles: Sendable {
    /// Content types by file extension; other files in the folder are not served.
    static let types = [
        "html": "text/html; charset=utf-8", "css": "text/css; charset=utf-8", "js": "text/javascript; charset=utf-8",
        "svg": "image/svg+xml", "png": "image/png", "webmanifest": "application/manifest+json",
        // The API's OpenAPI description (docs/openapi.yaml is a link to it), also at /api/v1/openapi.yaml.
        "yaml": "application/yaml; charset=utf-8",
    ]
    /// Without these a folder is not the page (an older install, or another folder).
    static let required = ["index.html", "app.js", "style.css", "openapi.yaml"]
    /// Bounds on what is read: the folder is trusted, but a stray large file must not be kept in memory.
    static let maximumFiles = 64
    static let maximumFileBytes = 4 << 20

    /// Where the files were looked for, for the error when they are missing.
    let searched: [String]
    private let contents: [String: ByteBuffer]

    /// The names served (for tests and the size budget).
    var names: [String] { contents.keys.sorted() }

    /// The content type of a file name, or nil if it is not one the page serves.
    static func type(of name: String) -> String? {
        guard let dot = name.lastIndex(of: "."), !name.hasPrefix("."), name.utf8.count <= 64,
              name.allSatisfy({ $0.isASCII && ($0.isLetter || $0.isNumber || $0 == "-" || $0 == "." || $0 == "_") })
        else { return nil }
        return types[String(name[name.index(after: dot)...])]
    }

    /// Beside the binary, where a build puts them (`Vigil_WebServer.resources/Page`), else in
    /// `../share/vigil/page` from the binary (an installed vigil, see the README). Blocking
    /// reads: call it off the cooperative pool.
    static func load(executable: URL = URL(fileURLWithPath: "/proc/self/exe").resolvingSymlinksInPath()) -> PageFiles {
        let folder = executable.deletingLastPathComponent()
        let candidates = [
            folder.appendingPathComponent("Vigil_WebServer.resources/Page"),
            folder.appendingPathComponent("../share/vigil/page").standardizedFileURL,
        ].map(\.path)
        for directory in candidates {
            guard let names = try? FileManager.default.contentsOfDirectory(atPath: directory),
                  required.allSatisfy(names.contains) else { continue }
            var contents: [String: ByteBuffer] = [:]
            for name in names.sorted().prefix(maximumFiles) where type(of: name) != nil {
                let path = directory + "/" + name
                guard let size = (try? FileManager.default.attributesOfItem(atPath: path))?[.size] as? Int,
                      size <= maximumFileBytes, let data = FileManager.default.contents(atPath: path) else { continue }
                contents[name] = ByteBuffer(bytes: data)
            }
            if required.allSatisfy({ contents[$0] != nil }) { return PageFiles(searched: candidates, contents: contents) }
        }
        return PageFiles(searched: candidates, contents: [:])
    }

    /// `webSocketAuthority`: the host and port the page was asked under, named in `connect-src`
    /// beside 'self', which Safari does not take to cover ws: and wss: (CSP level 3 does).
    func response(_ name: String, webSocketAuthority: String? = nil) throws(APIError) -> Response {
        guard let type = Self.type(of: name), contents[name] != nil || contents.isEmpty else {
            throw APIError(.notFound, "no such file: /static/\(name.prefix(64))")
        }
        guard let body = contents[name] else {
            throw APIError(.internalServerError, "the web page's files are missing (looked in \(searched.joined(separator: " and "))); "
                + "install them as the README says (Sources/WebServer/Page to /usr/local/share/vigil/page). The API works without them.")
        }
        return Response(
            status: .ok,
            headers: [
                .contentType: type, .cacheControl: "no-cache",
                // Only this server's own script, styles, images and videos: nothing injected runs.
                // manifest-src falls back to default-src.
                .contentSecurityPolicy: "default-src 'self'; img-src 'self' data: blob:; media-src 'self' blob:; frame-ancestors 'none'; form-action 'self'"
                    + (webSocketAuthority.map { "; connect-src 'self' ws://\($0) wss://\($0)" } ?? ""),
                .xContentTypeOptions: "nosniff", .init("Referrer-Policy")!: "same-origin",
            ],
            body: .init(byteBuffer: body))
    }
}

extension Response {
    /// The same status and headers with no body, for HEAD (Content-Length stays the GET's).
    func withoutBody() -> Response {
        var head = self
        let length = headers[.contentLength].flatMap { Int($0) } ?? body.contentLength
        head.body = ResponseBody(contentLength: length) { writer in try await writer.finish(nil) }
        return head
    }
}
