import CaptureTesting
import Foundation
import Recorder
import Testing

/// The page as a person uses it, in a real headless Chromium driven through Selenium
/// (Browser/*.py, one script per part of the page, each reporting named checks that the tests
/// here require): `vigil run` with two synthetic cameras (motion detection on the first)
/// serves it on a free loopback port (`ServedPage`). Screenshots go to `.build/screenshots`.
@Suite(.timeLimit(.minutes(10))) struct WebPageTests {
    /// A camera's day (Browser/day_check.py) at desktop and phone sizes: the timeline's first
    /// view fits the day's recordings, zoom (wheel on a desktop, pinch on a phone, buttons,
    /// keys), drag to pan, a click in empty time says what it plays instead, a range over
    /// footage downloads a clip (decoded here) and one over none cannot be downloaded, the
    /// stills strip newest first with more as it scrolls, axe-core in light and dark mode.
    @Test func theDayTimelineZoomsPansAndDownloadsOnlyFootage() async throws {
        let page = try await ServedPage.start()
        try await page.stopping {
            for size in ["desktop", "phone"] {
                let report = try await BrowserCheck.run("day_check.py", url: page.url, size: size)
                let gestures = size == "desktop" ? ["wheel-zoom-in", "wheel-zoom-out"] : ["pinch-zoom-in", "pinch-zoom-out"]
                BrowserCheck.expect(report, required: Self.dayChecks + gestures, size: size)
                // The clip the page downloaded, decoded here too: the range's frames, in order.
                let detail = report.checks.first { $0.name == "range-download" }?.detail ?? ""
                let clip = try #require(detail.components(separatedBy: " (").first.flatMap { $0.hasSuffix(".mp4") ? $0 : nil }, "\(size): \(detail)")
                #expect(RecordingInspector.ffprobeProblem(clip) == nil)
                let frames = try RecordingInspector.decode(clip).sequences
                #expect(frames.count >= 10 && frames.allSatisfy { $0 != nil }, "\(size): the clip holds the range's frames: \(frames.count)")
                try? FileManager.default.removeItem(atPath: (clip as NSString).deletingLastPathComponent)
            }
        }
    }

    static let dayChecks = [
        "first-view-fits", "stills-newest-first", "day-axe", "zoom-buttons", "drag-pan", "gap-click-says-so", "click-plays",
        "timeline-keys", "range-one-line", "range-download", "range-handles", "range-empty-disabled", "stills-more-on-scroll",
        "day-no-error", "day-console", "day-axe-dark",
    ]

    /// Event review (Browser/review_check.py) at desktop and phone sizes: events of all cameras
    /// newest first with their pictures, each filter kept in the address, an event played from
    /// its pre-roll with its span marked, j/k, arrows, space and r from the keyboard, "reviewed"
    /// kept by the server after a reload and undone on the page when the server refuses.
    @Test func eventsAreReviewedNewestFirstFromTheKeyboard() async throws {
        let page = try await ServedPage.start()
        try await page.stopping {
            try await page.addFinishedEvents()
            for size in ["desktop", "phone"] {
                let report = try await BrowserCheck.run("review_check.py", url: page.url, size: size)
                BrowserCheck.expect(report, required: Self.reviewChecks, size: size)
            }
        }
    }

    /// Another program's page on another port of loopback (Browser/attack_check.py) cannot mark
    /// an event, open live video or load a snapshot; Vigil's own page, running the same script,
    /// can. The foreign page used to do all three: origins were compared by host name only.
    @Test func aPageOnAnotherPortOfLoopbackCannotMarkEventsOrWatch() async throws {
        let page = try await ServedPage.start()
        try await page.stopping {
            try await page.addFinishedEvents()
            let events = try RecordingIndex(root: page.root).motionEvents().filter { $0.camera == "yard" }.map(\.id).sorted()
            try #require(events.count == 2)
            let report = try await BrowserCheck.run("attack_check.py", url: page.url, size: "desktop", arguments: events.map(String.init))
            BrowserCheck.expect(report, required: Self.attackChecks, size: "desktop")
        }
    }

    static let attackChecks = [
        "foreign-page-cannot-mark", "foreign-page-no-live", "foreign-page-no-snapshot", "own-page-marks", "own-page-live", "own-page-snapshot",
    ]

    static let reviewChecks = [
        "review-list", "review-opens-preroll", "review-marker", "review-axe", "review-keys-jk", "review-keys-arrows",
        "review-key-space", "review-key-r", "review-reviewed-kept", "review-filter-unreviewed", "review-undo-on-error",
        "review-filter-camera", "review-filter-day", "review-layout", "review-console", "review-axe-dark",
    ]

    /// Live view (Browser/live_check.py) at desktop and phone sizes, in light and dark mode:
    /// the grid live through Media Source Extensions for the cards on screen and snapshots for
    /// the rest, one camera full screen, a camera's day live until a time is picked, side by
    /// side in step, axe-core on every view, and the live latency: the time painted into the
    /// synthetic camera's frames against the time the page shows them, at most 1 s (median).
    @Test func liveViewIsFullRateInStepAndWithinASecond() async throws {
        let page = try await ServedPage.start()
        try await page.stopping {
            for (size, dark) in [("desktop", false), ("phone", false), ("desktop", true), ("phone", true)] {
                let report = try await BrowserCheck.run("live_check.py", url: page.url, size: size, arguments: dark ? ["dark"] : [])
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
                let report = try await BrowserCheck.run("tidy_check.py", url: page.url, size: size, arguments: [token])
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
