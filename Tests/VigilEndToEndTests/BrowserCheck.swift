import CaptureTesting
import Foundation
import Glibc
import Plumbing
import Recorder
import Testing

/// A `vigil run` serving the page, with the two synthetic cameras the browser checks expect:
/// porch (motion detection on, stills every second) and yard, 320x240 at 10 fps (large enough
/// for the painted clock's tenths to be read from the picture), 2 s segments.
struct ServedPage {
    let dir: TemporaryDirectory
    let process: Process
    let url: String
    var root: String { dir.path + "/data" }

    /// With a `token`, the page asks for it (`[http] token_file`).
    static func start(token: String? = nil) async throws -> ServedPage {
        let dir = try TemporaryDirectory()
        let root = dir.path + "/data", file = dir.path + "/vigil.toml"
        var tokenLine = ""
        if let token {
            try token.write(toFile: dir.path + "/token", atomically: true, encoding: .utf8)
            chmod(dir.path + "/token", 0o600)
            tokenLine = "token_file = \"\(dir.path)/token\""
        }
        func camera(_ name: String, _ device: Int) -> String {
            """
            [cameras.\(name)]
            device = "synthetic-\(device)"
            size = "320x240"
            pixel_format = "yuyv422"
            fps = 10

            [[record]]
            camera = "\(name)"
            segment_seconds = 2

            """
        }
        try """
            [storage]
            root = "\(root)"

            [http]
            listen = "127.0.0.1:0"
            \(tokenLine)

            \(camera("porch", 0))
            [[timelapse]]
            camera = "porch"
            interval_seconds = 1

            # The synthetic picture's moving bar is motion all the time: one event, under way.
            [[motion]]
            camera = "porch"

            \(camera("yard", 1))
            """.write(toFile: file, atomically: true, encoding: .utf8)
        let process = try VigilBinary.start(["run", "--config", file, "--log-level", "notice"], in: dir.path)
        func stdout() -> String { (try? String(contentsOfFile: dir.path + "/stdout.txt", encoding: .utf8)) ?? "" }
        guard await waitUntil(seconds: 30, { stdout().contains("Web page: http://127.0.0.1:") }),
              let line = stdout().split(separator: "\n").first(where: { $0.hasPrefix("Web page: ") })
        else {
            process.terminate()
            throw BrowserCheck.Failure("vigil did not serve its page: \(stdout())")
        }
        let url = String(line.dropFirst("Web page: ".count).split(separator: " ")[0])
        // A few finished segments and stills before a browser looks.
        _ = await waitUntil(seconds: 30) { RecordingInspector.files(under: root + "/porch/video", endingWith: ".mp4").count >= 3 }
        return ServedPage(dir: dir, process: process, url: url)
    }

    /// Two finished motion events of yard, each with a picture, written into the running
    /// vigil's index (its SQLite file, as a second process may): the synthetic pictures are
    /// motion all the time, so porch's own detection gives one event that never ends and
    /// has no picture yet, and the review view needs finished ones with pictures to step through.
    func addFinishedEvents() async throws {
        // Yard's recordings cover the events and their 5 s pre-roll.
        _ = await waitUntil(seconds: 40) { RecordingInspector.files(under: root + "/yard/video", endingWith: ".mp4").count >= 8 }
        let still = try #require(RecordingInspector.files(under: root + "/porch", endingWith: ".jpg").first, "porch's stills")
        let index = try RecordingIndex(root: root)
        let now = Int64(Date().timeIntervalSince1970 * 1e9)
        try FileManager.default.createDirectory(atPath: root + "/yard/events", withIntermediateDirectories: true)
        for (n, (from, to)) in [(12, 9), (6, 4)].enumerated() {
            let picture = "yard/events/yard-event-\(n).jpg"
            try FileManager.default.copyItem(atPath: still, toPath: root + "/" + picture)
            let start = now - Int64(from) * 1_000_000_000
            try index.startMotionEvent(camera: "yard", startNanos: start)
            try index.endMotionEvent(camera: "yard", startNanos: start, endNanos: now - Int64(to) * 1_000_000_000, peakPercent: 12.5 + Double(n), picture: picture)
        }
    }

    /// Runs `body`, then stops vigil whether it threw or not.
    func stopping(_ body: () async throws -> Void) async throws {
        do {
            try await body()
        } catch {
            await stop()
            throw error
        }
        await stop()
    }

    /// Stops vigil (it must exit cleanly) and removes its folder.
    func stop() async {
        kill(process.processIdentifier, SIGTERM)
        #expect(await waitForExit(process, seconds: 30))
        #expect(process.terminationStatus == 0)
        dir.remove()
    }
}

/// Runs one of the page's browser checks (`Browser/*.py`, driving headless Chromium through
/// Selenium with axe-core) and decides on what it saw: the script only reports.
enum BrowserCheck {
    struct Failure: Error, CustomStringConvertible {
        let description: String
        init(_ description: String) { self.description = description }
    }

    struct Check: Decodable {
        let name: String
        let ok: Bool
        let detail: String
    }

    struct Report: Decodable {
        let checks: [Check]
        let screenshots: [String]
        /// Files the check downloaded (clips), for the test to decode.
        let downloads: [String]?
    }

    /// The virtual environment `Scripts/setup --tests` makes (Debian's selenium, PyPI's axe).
    static var python: String {
        let cache = ProcessInfo.processInfo.environment["XDG_CACHE_HOME"] ?? NSHomeDirectory() + "/.cache"
        return cache + "/vigil/browser/bin/python"
    }

    /// Where the screenshots are kept after the run: `.build/screenshots` of the package.
    static var screenshotFolder: String {
        URL(fileURLWithPath: #filePath).deletingLastPathComponent().appendingPathComponent("../../.build/screenshots").standardizedFileURL.path
    }

    /// Chromium runs for a minute or more: on threads of their own, never on Swift's
    /// cooperative pool (two threads here), which the servers under test need meanwhile.
    private static let lane = BlockingIO("vigil.tests.browser", width: 2)

    /// Runs `script` on `url` at `size` ("desktop" or "phone") and returns its report.
    static func run(_ script: String, url: String, size: String, arguments: [String] = []) async throws -> Report {
        try await lane.run { try runWaiting(script, url: url, size: size, arguments: arguments) }
    }

    private static func runWaiting(_ script: String, url: String, size: String, arguments: [String]) throws -> Report {
        guard FileManager.default.isExecutableFile(atPath: python) else {
            throw Failure("\(python) is missing: run Scripts/setup --tests (it makes the browser tests' Python environment)")
        }
        let path = URL(fileURLWithPath: #filePath).deletingLastPathComponent().appendingPathComponent("Browser/\(script)").path
        let run = RecordingInspector.run(python, [path, url, screenshotFolder, size] + arguments)
        guard run.status == 0, let report = try? JSONDecoder().decode(Report.self, from: Data(run.output.utf8)) else {
            throw Failure("\(script) (\(size)) exited \(run.status): \(run.errorOutput.suffix(2000)) \(run.output.suffix(2000))")
        }
        return report
    }

    /// Every check in `required` was made and passed, and no other check failed.
    static func expect(_ report: Report, required: [String], size: String, sourceLocation: SourceLocation = #_sourceLocation) {
        let made = Set(report.checks.map(\.name))
        for name in required where !made.contains(name) {
            Issue.record("\(size): the check \(name) was not made", sourceLocation: sourceLocation)
        }
        for check in report.checks where !check.ok {
            Issue.record("\(size): \(check.name): \(check.detail)", sourceLocation: sourceLocation)
        }
    }
}
