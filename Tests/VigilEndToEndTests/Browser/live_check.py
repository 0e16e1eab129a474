"""Live view in headless Chromium: the grid (live for the cards on screen, snapshots for the
others), one camera full screen, a camera's day live then recorded then live, side by side, and
the live latency read from the time the synthetic camera paints into its frames.

Usage: ~/.cache/vigil/browser/bin/python live_check.py URL SCREENSHOT_DIR SIZE [dark]
URL: the page (two synthetic H.264 cameras, the first with stills, as Vigil's end-to-end test
and /work/notes/devserver.sh run them). SIZE: desktop or phone. Prints one JSON object.
"""
import os
import statistics
import sys
import time

from selenium.webdriver.common.by import By
from selenium.webdriver.common.keys import Keys

sys.path.insert(0, os.path.dirname(os.path.abspath(__file__)))
import browser  # noqa: E402

# Reads the synthetic camera's painted time of day ("HH:MM:SS.d", PatternPainter: 3x5-cell
# glyphs, cell = max(1, height/48) px, advance 4 cells, bright 235 on grey 96) from a video's
# current frame at its intrinsic size; returns seconds of the day (UTC) or null.
READ_DIGITS = """
window.readPainted = (video) => {
  const w = video.videoWidth, h = video.videoHeight;
  if (!w || !h) return null;
  const canvas = window.readCanvas || (window.readCanvas = document.createElement("canvas"));
  canvas.width = w; canvas.height = h;
  const g = canvas.getContext("2d", { willReadFrequently: true });
  g.drawImage(video, 0, 0, w, h);
  const scale = Math.max(1, Math.floor(h / 48)), advance = 4 * scale;
  const top = Math.floor(h * 3 / 4) + Math.max(0, Math.trunc((Math.floor(h / 4) - 5 * scale) / 2));
  const pixels = g.getImageData(0, top, w, 5 * scale).data;
  const font = { "0": [7,5,5,5,7], "1": [2,6,2,2,7], "2": [7,1,7,4,7], "3": [7,1,7,1,7], "4": [5,5,7,1,1],
    "5": [7,4,7,1,7], "6": [7,4,7,5,7], "7": [7,1,1,1,1], "8": [7,5,7,5,7], "9": [7,5,7,1,7],
    ":": [0,2,0,2,0], ".": [0,0,0,0,2] };
  let text = "";
  for (let n = 0; (n + 1) * advance <= w + scale && n < 10; n++) {
    const rows = [];
    for (let row = 0; row < 5; row++) {
      let bits = 0;
      for (let col = 0; col < 3; col++) {
        const x = n * advance + col * scale + (scale >> 1), y = row * scale + (scale >> 1), i = (y * w + x) * 4;
        if ((pixels[i] + pixels[i + 1] + pixels[i + 2]) / 3 > 165) bits |= 4 >> col;
      }
      rows.push(bits);
    }
    const glyph = Object.keys(font).find((k) => font[k].every((r, i) => r === rows[i]));
    if (glyph === undefined) break;
    text += glyph;
  }
  const m = text.match(/^(\\d\\d):(\\d\\d):(\\d\\d)(?:\\.(\\d))?/);
  return m ? { text, seconds: +m[1] * 3600 + +m[2] * 60 + +m[3] + (m[4] ? +m[4] / 10 : 0) } : null;
};
window.nowOfDay = () => (Date.now() % 86400000) / 1000;
"""

# Samples the playing video at each frame it presents for `seconds`: latency (now - painted) and frames shown.
SAMPLE_LIVE = READ_DIGITS + """
const [selector, seconds, done] = arguments;
const video = document.querySelector(selector), samples = [], unread = [];
let frames = 0, first = null;
const quality = video.getVideoPlaybackQuality();
const dropped0 = quality.droppedVideoFrames;
const onFrame = (now, meta) => {
  frames++;
  if (first === null) first = performance.now();
  const painted = readPainted(video);
  if (painted) { let l = nowOfDay() - painted.seconds; if (l < -43200) l += 86400; samples.push(l); } else unread.push(1);
  if (performance.now() - first < seconds * 1000) video.requestVideoFrameCallback(onFrame);
  else done({ samples, unread: unread.length, frames, elapsed: (performance.now() - first) / 1000,
              dropped: video.getVideoPlaybackQuality().droppedVideoFrames - dropped0 });
};
video.requestVideoFrameCallback(onFrame);
"""

PLAYING = """
const v = arguments[0] instanceof Element ? arguments[0] : document.querySelector(arguments[0]);
if (!v || v.readyState < 2 || v.paused || v.error) return null;
const t = v.currentTime;
return new Promise((resolve) => setTimeout(() => resolve(v.currentTime > t + 0.05 ? v.currentTime : null), 400));
"""


def main():
    url, shots, size = sys.argv[1], sys.argv[2], sys.argv[3]
    dark = "dark" in sys.argv[4:]
    tag = f"{size}-dark" if dark else size
    checks, screenshots, errors = [], [], []

    def check(name, ok, detail):
        checks.append({"name": name, "ok": bool(ok), "detail": str(detail)[:600]})

    driver = browser.start(size, dark=dark)
    driver.set_script_timeout(60)

    def playing(target, seconds=20):
        return browser.wait(lambda: driver.execute_script(PLAYING, target), seconds)

    def view(name):
        violations = browser.accessibility(driver)
        check(f"axe-{name}", not violations, violations or "no serious or critical violation")
        errors.extend(browser.console_errors(driver))
        screenshots.append(browser.screenshot(driver, shots, f"{name}-{tag}"))

    def live_of(selector):
        return driver.execute_script("const e = document.querySelector(arguments[0]); return e && e.dataset.live", selector)

    try:
        driver.get(url)
        cameras = browser.wait(lambda: driver.execute_script(
            "return fetch('/api/v1/cameras').then(r => r.json()).then(j => j.cameras)"))
        names = [c["name"] for c in cameras or []]
        fps = {c["name"]: c.get("fps") or 10 for c in cameras or []}
        first, second = names[0], names[1]

        # ---- The grid: both cards on screen play through MSE ----
        live = browser.wait(lambda: all(driver.execute_script(PLAYING, f'#grid .camera[data-camera="{n}"] .media video')
                                        for n in (first, second)) and [live_of(f'#grid .camera[data-camera="{n}"] .media') for n in (first, second)], 30)
        check("grid-live-mse", live and all(m == "mse" for m in live), f"cards' players: {live}")
        view("grid")

        # A short window: the second card is below the fold and gets snapshots, not a stream.
        driver.execute_cdp_cmd("Emulation.setDeviceMetricsOverride", {"width": 390, "height": 340, "deviceScaleFactor": 1, "mobile": size == "phone"})
        second_media = f'#grid .camera[data-camera="{second}"] .media'
        srcs = []
        off = browser.wait(lambda: live_of(second_media) == "snapshot" and not driver.find_elements(By.CSS_SELECTOR, f"{second_media} video")
                           and (srcs.append(driver.execute_script("const i = document.querySelector(arguments[0] + ' img.still'); return i.complete && i.naturalWidth > 0 ? i.src : null", second_media)) or len(set(s for s in srcs if s)) >= 3), 15)
        first_live = live_of(f'#grid .camera[data-camera="{first}"] .media')
        check("grid-offscreen-snapshot", off and first_live == "mse",
              f"below the fold: {live_of(second_media)}, {len(set(s for s in srcs if s))} different snapshot URLs loaded; on screen: {first_live}")
        driver.execute_script("document.querySelector(arguments[0]).scrollIntoView()", second_media)
        scrolled = browser.wait(lambda: live_of(second_media) == "mse" and driver.execute_script(PLAYING, f"{second_media} video"), 20)
        check("grid-scroll-live", scrolled and live_of(f'#grid .camera[data-camera="{first}"] .media') == "snapshot",
              f"scrolled into view: {live_of(second_media)}; scrolled away: {live_of(f'#grid .camera[data-camera={first}] .media')}")
        driver.execute_cdp_cmd("Emulation.clearDeviceMetricsOverride", {})
        if size == "phone":
            driver.execute_cdp_cmd("Emulation.setDeviceMetricsOverride", {"width": 390, "height": 844, "deviceScaleFactor": 2, "mobile": True})
        driver.execute_script("window.scrollTo(0, 0)")

        # ---- Full screen, from the card's button with the keyboard ----
        button = driver.find_element(By.CSS_SELECTOR, f'#grid .camera[data-camera="{first}"] .full')
        driver.execute_script("arguments[0].focus()", button)
        button.send_keys(Keys.ENTER)
        opened = browser.wait(lambda: driver.execute_script("return location.hash") == f"#live/{first}")
        video = playing("#full-box video", 20)
        box = driver.execute_script("const r = document.querySelector('#full-box video').getBoundingClientRect();"
                                    "return [r.width, r.height, innerWidth, innerHeight]") if video else None
        fills = box and abs(box[0] - box[2]) < 2 and abs(box[1] - box[3]) < 2
        grid_left = driver.execute_script("return document.querySelectorAll('#grid video, #grid img').length")
        check("full-live", opened and video and fills and live_of("#full-box") == "mse" and grid_left == 0,
              f"hash {driver.execute_script('return location.hash')}, player {live_of('#full-box')}, video box vs viewport {box}, grid players left {grid_left}")
        over = driver.execute_script("return [document.getElementById('full-name').textContent, document.getElementById('full-state').textContent,"
                                     "getComputedStyle(document.querySelector('#live .over')).position]")
        check("full-overlay", over[0] == first and over[1] and over[2] == "absolute", f"name, state, overlay: {over}")
        view("live")
        # The Fullscreen API: the button, then the key f.
        driver.find_element(By.ID, "full-toggle").click()
        entered = browser.wait(lambda: driver.execute_script("return document.fullscreenElement && document.fullscreenElement.id"), 5)
        driver.find_element(By.TAG_NAME, "body").send_keys("f")
        left = browser.wait(lambda: driver.execute_script("return !document.fullscreenElement"), 5)
        check("full-fullscreen-api", entered == "live" and left, f"button: fullscreen element {entered}; key f: left {left}")

        # ---- Latency on the full-screen view ----
        appended = "return fullView.player && fullView.player.stats ? fullView.player.stats.appended : null"
        before = driver.execute_script(appended)
        samples = driver.execute_async_script(SAMPLE_LIVE, "#full-box video", 12)
        after = driver.execute_script(appended)
        lat = sorted(samples["samples"])
        if len(lat) >= 20:
            median, worst = statistics.median(lat), max(lat)
            check("live-latency", median <= 1.0 and samples["elapsed"] >= 10,
                  f"median {median:.3f} s, max {worst:.3f} s, min {lat[0]:.3f} s over {len(lat)} frames in {samples['elapsed']:.1f} s ({samples['unread']} unread)")
        else:
            check("live-latency", False, f"only {len(lat)} readable frames: {samples}")
        # Full rate: the fragments (the server sends one per frame) appended to Media Source
        # Extensions while the samples were taken; and, so that it is seen playing, at least half
        # as many painted (a busy machine's browser skips painting some).
        elapsed = max(samples["elapsed"], 0.001)
        shown = samples["frames"] / elapsed
        delivered = (after - before) / elapsed if isinstance(before, int) and isinstance(after, int) else 0
        check("live-fps", delivered >= 0.9 * fps[first] and shown >= 0.5 * fps[first],
              f"{delivered:.2f} frames/s delivered to the player, {shown:.2f} painted (requestVideoFrameCallback, {samples['frames']} in {samples['elapsed']:.1f} s, {samples['dropped']} dropped by the browser) for a {fps[first]} fps camera")
        driver.find_element(By.ID, "full-back").click()
        home = browser.wait(lambda: driver.execute_script("return location.hash") in ("", "#"), 10)
        back = home and playing(f'#grid .camera[data-camera="{first}"] .media video', 30)
        streams = driver.execute_script("return document.querySelectorAll('#full-box video, #full-box img').length")
        card = driver.execute_script("const m = document.querySelector(arguments[0]); const p = [...gridLive.players].find(([c]) => c.contains(m));"
                                     "return [m && m.dataset.live, p && JSON.stringify(p[1].stats)]", f'#grid .camera[data-camera="{first}"] .media')
        check("full-back", back and streams == 0, f"back on the grid {bool(home)}, live again: {bool(back)} (card {card}); full-screen players left: {streams}")

        # ---- A camera's day: live, recorded after a pick, live again ----
        driver.find_element(By.CSS_SELECTOR, f'#grid .camera[data-camera="{first}"] .name').click()
        day_live = playing("#day-live video", 20)
        hidden = driver.execute_script("return [document.getElementById('player').hidden, document.getElementById('day-live').hidden, document.getElementById('now-playing').textContent]")
        check("day-live", day_live and live_of("#day-live") == "mse" and hidden[0] and not hidden[1], f"live player {live_of('#day-live')}, recorded player hidden {hidden[0]}, caption {hidden[2]!r}")
        view("day-live")
        # Pick a time: a still some seconds old (its recording is finished).
        still = browser.wait(lambda: driver.execute_script("""
            for (const still of document.querySelectorAll('#stills .still')) {
              const age = (Date.now() - Date.parse(still.dataset.time)) / 1000;
              if (age > 8 && age < 120) return still;
            }
            return null;"""), 30)
        if still:
            driver.execute_script("arguments[0].scrollIntoView({block: 'center'})", still)
            still.click()
        recorded = playing("#player", 20)
        state = driver.execute_script("return [document.getElementById('player').currentSrc, document.getElementById('day-live').hidden,"
                                      "document.querySelectorAll('#day-live video, #day-live img').length, document.getElementById('go-live').hidden]")
        check("day-recorded-after-pick", still and recorded and "/recordings/" in (state[0] or "") and state[1] and state[2] == 0 and not state[3],
              f"still clicked {bool(still)}; player {state[0]} playing {bool(recorded)}; live hidden {state[1]}, live players left {state[2]}; Live button shown {not state[3]}")
        live_button = driver.find_element(By.ID, "go-live")
        live_button.click()
        again = playing("#day-live video", 20)
        paused = driver.execute_script("return [document.getElementById('player').paused, document.getElementById('player').hidden]")
        after = driver.execute_script("return [location.hash, document.getElementById('go-live').hidden, document.getElementById('day-live').hidden,"
                                      "document.getElementById('now-playing').textContent, document.getElementById('day-note').textContent]")
        check("day-live-again", again and paused == [True, True] and live_of("#day-live") == "mse",
              f"live again {bool(again)} ({live_of('#day-live')}), recorded player paused/hidden {paused}; address, Live button hidden, live box hidden, captions: {after}")

        # The day view's link to full screen, and back.
        driver.find_element(By.ID, "day-full").click()
        full = browser.wait(lambda: driver.execute_script("return location.hash") == f"#live/{first}" and playing("#full-box video", 20))
        driver.find_element(By.ID, "full-back").click()
        returned = browser.wait(lambda: driver.execute_script("return location.hash") == f"#camera/{first}" and playing("#day-live video", 20))
        check("day-to-full", full and returned, f"day view -> full screen playing {bool(full)}; Back -> the day view, live {bool(returned)}")

        # ---- Side by side: from the header's link; live by default ----
        driver.find_element(By.CSS_SELECTOR, 'header nav a[href="#together"]').click()
        both_live = browser.wait(lambda: len(driver.find_elements(By.CSS_SELECTOR, "#tg-grid .tile")) >= 2 and all(
            driver.execute_script(PLAYING, t) for t in driver.find_elements(By.CSS_SELECTOR, "#tg-grid .tile .screen video")), 30)
        check("together-live", both_live, f"tiles: {len(driver.find_elements(By.CSS_SELECTOR, '#tg-grid .tile'))}, all live and playing: {bool(both_live)}")
        # Two cameras at one instant, 40 s ago.
        driver.execute_script("""
            const at = new Date(Date.now() - 40000), p = (n) => String(n).padStart(2, '0');
            document.getElementById('tg-day').value = `${at.getFullYear()}-${p(at.getMonth() + 1)}-${p(at.getDate())}`;
            document.getElementById('tg-time').value = `${p(at.getHours())}:${p(at.getMinutes())}:${p(at.getSeconds())}`;""")
        for box in driver.find_elements(By.CSS_SELECTOR, "#tg-cameras input"):
            if box.is_selected() != (box.get_attribute("value") in (first, second)):
                box.click()
        driver.find_element(By.CSS_SELECTOR, '#tg-form button[type="submit"]').click()
        address = browser.wait(lambda: "at=" in driver.execute_script("return location.hash") and driver.execute_script("return location.hash"))
        tiles = browser.wait(lambda: len(driver.find_elements(By.CSS_SELECTOR, "#tg-grid .tile video:not(.off)")) == 2 and all(
            driver.execute_script(PLAYING, v) for v in driver.find_elements(By.CSS_SELECTOR, "#tg-grid .tile video:not(.off)")), 30)
        check("together-address", address and f"cameras={first},{second}" in address, f"address {address}")
        diffs, tries, outliers = [], 0, []
        deadline = time.monotonic() + 20
        while tiles and len(diffs) < 12 and time.monotonic() < deadline:
            tries += 1
            read = driver.execute_script(READ_DIGITS + "return [...document.querySelectorAll('#tg-grid .tile video:not(.off)')].map((v) => v.paused ? null :"
                                         " Object.assign(readPainted(v) || {}, { at: [+v.currentTime.toFixed(2), v.readyState, v.seeking, v.playbackRate] }))")
            if len(read) == 2 and all(r and r.get("text") for r in read):
                diffs.append(abs(read[0]["seconds"] - read[1]["seconds"]))
                if diffs[-1] > 0.5:
                    outliers.append([(r["text"], r["at"]) for r in read])
            time.sleep(0.3)
        check("together-in-step", len(diffs) >= 8 and max(diffs) <= 0.5,
              f"painted times of the two cameras differ by at most {max(diffs) if diffs else None} s (median {statistics.median(diffs) if diffs else None}) over {len(diffs)} of {tries} reads; reads over 0.5 s apart (painted, [currentTime, readyState, seeking, rate]): {outliers[:3]}")
        columns = driver.execute_script("return getComputedStyle(document.getElementById('tg-grid')).gridTemplateColumns.split(' ').length")
        check("together-layout", columns == (1 if size == "phone" else 2), f"{columns} column(s) at {size} size")
        # Pause: every camera stops; the address keeps the instant.
        driver.find_element(By.ID, "tg-play").click()
        stopped = browser.wait(lambda: all(driver.execute_script("return arguments[0].paused", v) for v in driver.find_elements(By.CSS_SELECTOR, "#tg-grid .tile video")), 5)
        check("together-pause", stopped and "at=" in driver.execute_script("return location.hash"), f"all paused {bool(stopped)}, address {driver.execute_script('return location.hash')}")
        driver.find_element(By.ID, "tg-play").click()
        view("together")

        # An instant before the first recording: both say "no recording", then join when it starts.
        earliest = driver.execute_script("""
            const to = new Date(), from = new Date(to - 6 * 3600e3);
            return fetch(`/api/v1/cameras/${encodeURIComponent(arguments[0])}/recordings?from=${from.toISOString()}&to=${to.toISOString()}`)
              .then((r) => r.json()).then((j) => j.recordings.length ? Date.parse(j.recordings[0].start) : null);""", first)
        if earliest:
            driver.execute_script("""
                const at = new Date(arguments[0] - 3000), p = (n) => String(n).padStart(2, '0');
                document.getElementById('tg-day').value = `${at.getFullYear()}-${p(at.getMonth() + 1)}-${p(at.getDate())}`;
                document.getElementById('tg-time').value = `${p(at.getHours())}:${p(at.getMinutes())}:${p(at.getSeconds())}`;""", earliest)
            driver.find_element(By.CSS_SELECTOR, '#tg-form button[type="submit"]').click()
            none = browser.wait(lambda: len(driver.find_elements(By.CSS_SELECTOR, "#tg-grid .tile .none")) == 2 and all(
                e.is_displayed() for e in driver.find_elements(By.CSS_SELECTOR, "#tg-grid .tile .none")), 10)
            joined = browser.wait(lambda: not any(e.is_displayed() for e in driver.find_elements(By.CSS_SELECTOR, "#tg-grid .tile .none")) and all(
                driver.execute_script(PLAYING, v) for v in driver.find_elements(By.CSS_SELECTOR, "#tg-grid .tile video:not(.off)")), 20)
            check("together-joins", none and joined, f"3 s before the first recording: 'no recording' on both {bool(none)}; both playing once it starts {bool(joined)}")
        else:
            check("together-joins", False, "no recording found in the last 6 h")

        # Leaving for the grid stops the side-by-side players.
        driver.find_element(By.CSS_SELECTOR, "header nav a[href='#']").click()
        left = browser.wait(lambda: driver.execute_script("return document.querySelectorAll('#tg-grid video').length === 0"), 5)
        count = driver.execute_script("return document.querySelectorAll('#tg-grid video').length")
        check("together-stops", left, f"side-by-side players left after leaving: {count}")
        outside = browser.outside_loads(driver)
        check("no-outside-loads", not outside, outside or "every resource came from the page's own server")
        errors.extend(browser.console_errors(driver))
        page_error = driver.execute_script("const e = document.getElementById('error'); return e.hidden ? null : e.textContent")
        check("console", not errors and not page_error, errors or page_error or "no console error")
    except Exception as error:  # a step that could not be done is a failed check, reported with the others
        check("script", False, f"{type(error).__name__}: {error}")
    finally:
        driver.quit()
    browser.report({"checks": checks, "screenshots": [s for s in screenshots if s]})


main()
