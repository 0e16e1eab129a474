import CaptureTesting
import Foundation
import Glibc
import Testing

/// The page as a person uses it, in a real headless Chromium (Browser/page_check.py, through
/// Selenium): `vigil run` with two synthetic cameras (motion detection on the first) serves it
/// on a free loopback port.
@Suite(.timeLimit(.minutes(10))) struct WebPageTests {
    private struct Seen: Decodable {
        let grid: [String]
        let liveChanged: Bool
        let segments: Int
        let stills: Int
        let events: Int
        let played: String?
        let clip: String?
        let errors: [String]
    }

    @Test func theGridIsLiveTheTimelineListsRecordingsAndADraggedRangeDownloadsAClipThatDecodes() async throws {
        let dir = try TemporaryDirectory()
        defer { dir.remove() }
        let root = dir.path + "/data", file = dir.path + "/vigil.toml", downloads = dir.path + "/downloads"
        try FileManager.default.createDirectory(atPath: downloads, withIntermediateDirectories: true)
        try """
            [storage]
            root = "\(root)"

            [http]
            listen = "127.0.0.1:0"

            \(syntheticCamera("porch", device: 0))
            [[record]]
            camera = "porch"
            segment_seconds = 2

            [[timelapse]]
            camera = "porch"
            interval_seconds = 1

            # The synthetic picture's moving bar is motion all the time: one event, under way.
            [[motion]]
            camera = "porch"

            \(syntheticCamera("yard", device: 1))
            [[record]]
            camera = "yard"
            segment_seconds = 2

            """.write(toFile: file, atomically: true, encoding: .utf8)
        let process = try VigilBinary.start(["run", "--config", file, "--log-level", "notice"], in: dir.path)
        defer { if process.isRunning { process.terminate() } }
        func stdout() -> String { (try? String(contentsOfFile: dir.path + "/stdout.txt", encoding: .utf8)) ?? "" }
        #expect(await waitUntil(seconds: 30) { stdout().contains("Web page: http://127.0.0.1:") }, "\(stdout())")
        let address = try #require(stdout().split(separator: "\n").first { $0.hasPrefix("Web page: ") }?.dropFirst("Web page: ".count))
        let url = String(address.split(separator: " ")[0])
        // Three finished segments and some stills before the browser looks.
        #expect(await waitUntil(seconds: 30) { RecordingInspector.files(under: root + "/porch/video", endingWith: ".mp4").count >= 3 })

        let script = URL(fileURLWithPath: #filePath).deletingLastPathComponent().appendingPathComponent("Browser/page_check.py").path
        let run = RecordingInspector.run("/usr/bin/python3", [script, url, downloads, "porch,yard"])
        #expect(run.status == 0, "\(run.errorOutput)")
        let decoder = JSONDecoder()
        decoder.keyDecodingStrategy = .convertFromSnakeCase
        let seen = try decoder.decode(Seen.self, from: Data(run.output.utf8))

        #expect(Set(seen.grid) == ["porch", "yard"], "the grid shows each configured camera")
        #expect(seen.liveChanged, "the live image changes")
        #expect(seen.segments >= 3, "the timeline lists the recordings")
        #expect(seen.stills >= 1, "the strip shows the stills")
        #expect(seen.events >= 1, "the timeline marks the motion event")
        #expect(seen.played?.contains("/api/v1/recordings/") == true, "a click on the timeline plays a recording: \(seen.played ?? "nothing")")
        #expect(seen.errors.isEmpty, "\(seen.errors)")
        let clip = try #require(seen.clip, "a dragged range downloads as a clip")
        #expect(RecordingInspector.ffprobeProblem(clip) == nil)
        let frames = try RecordingInspector.decode(clip).sequences
        #expect(frames.count >= 10 && frames.allSatisfy { $0 != nil }, "the clip holds the range's frames: \(frames.count)")

        kill(process.processIdentifier, SIGTERM)
        #expect(await waitForExit(process, seconds: 30))
        #expect(process.terminationStatus == 0)
    }

    /// Live view (Browser/live_check.py) at desktop and phone sizes, in light and dark mode:
    /// the grid live through Media Source Extensions for the cards on screen and snapshots for
    /// the rest, one camera full screen, a camera's day live until a time is picked, side by
    /// side in step, axe-core on every view, and the live latency: the time painted into the
    /// synthetic camera's frames against the time the page shows them, at most 1 s (median).
    @Test func liveViewIsFullRateInStepAndWithinASecond() async throws {
        let page = try await ServedPage.start()
        try await page.stopping {
            for (size, dark) in [("desktop", false), ("phone", false), ("desktop", true), ("phone", true)] {
                let report = try BrowserCheck.run("live_check.py", url: page.url, size: size, arguments: dark ? ["dark"] : [])
                BrowserCheck.expect(report, required: Self.liveChecks, size: dark ? size + " dark" : size)
                for check in report.checks where ["live-latency", "live-fps", "together-in-step"].contains(check.name) {
                    print("\(size)\(dark ? " dark" : ""): \(check.name): \(check.detail)")
                }
            }
        }
    }

    static let liveChecks = [
        "grid-live-mse", "axe-grid", "grid-offscreen-snapshot", "grid-scroll-live", "full-live", "full-overlay", "axe-live",
        "full-fullscreen-api", "live-latency", "live-fps", "full-back", "day-live", "axe-day-live", "day-recorded-after-pick",
        "day-live-again", "day-to-full", "together-live", "together-address", "together-in-step", "together-layout",
        "together-pause", "axe-together", "together-joins", "together-stops", "no-outside-loads", "console",
    ]

    /// The page as an app (Browser/tidy_check.py), on a vigil with a token, at desktop and phone
    /// sizes: Chromium reads the manifest and finds it installable, the icons and favicon load
    /// (before logging in too), dark mode follows the system, the header is reached by Tab with
    /// a visible focus, nothing is loaded from elsewhere, the page's files stay within 150 KB,
    /// and Log out ends the session.
    @Test func thePageIsAnInstallableAppWithLoginLogoutAndDarkMode() async throws {
        let token = "browser-check-token-4711"
        let page = try await ServedPage.start(token: token)
        try await page.stopping {
            for size in ["desktop", "phone"] {
                let report = try BrowserCheck.run("tidy_check.py", url: page.url, size: size, arguments: [token])
                BrowserCheck.expect(report, required: Self.tidyChecks, size: size)
                for check in report.checks where check.name == "page-size" { print("\(size): \(check.name): \(check.detail)") }
            }
        }
    }

    static let tidyChecks = [
        "login-form-light", "axe-login-light", "logged-in-light", "colours-light", "keyboard-header", "manifest", "installable",
        "icons", "page-size", "no-outside-loads-light", "logout-light", "console-light",
        "login-form-dark", "axe-login-dark", "logged-in-dark", "colours-dark", "no-outside-loads-dark", "logout-dark", "console-dark",
    ]
}
