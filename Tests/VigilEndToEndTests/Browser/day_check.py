"""A camera's day in Vigil's page, driven as a person would in headless Chromium: the timeline's
first view, zoom (wheel, buttons, keys; pinch on a phone), pan, a click in empty time, ranges
(a clip over footage downloads and decodes, none over no footage) and the stills strip.

Usage: python day_check.py URL SCREENSHOT_DIR SIZE [CAMERA] (SIZE desktop or phone; CAMERA
porch). Prints one JSON object (browser.report): every check's name, ok and what was seen, and
the screenshots (day-SIZE.png). The downloaded clip's path is in the detail of `range-download`.
"""
import glob
import json
import os
import re
import sys
import tempfile
import urllib.request

from selenium.webdriver.common.action_chains import ActionChains
from selenium.webdriver.common.actions.wheel_input import ScrollOrigin
from selenium.webdriver.common.by import By
from selenium.webdriver.common.keys import Keys

import browser

url, folder, size = sys.argv[1].rstrip("/"), sys.argv[2], sys.argv[3]
camera = sys.argv[4] if len(sys.argv) > 4 else "porch"
phone = size == "phone"
checks = browser.Checks()
downloads = tempfile.mkdtemp(prefix="vigil-day-check-")


def stills_on_server():
    with urllib.request.urlopen(f"{url}/api/v1/cameras/{camera}/stills") as answer:
        return len(json.load(answer)["stills"])


# More stills than a page of the strip (24), so that scrolling has more to show.
browser.wait(lambda: stills_on_server() > 30, 90)
driver = browser.start(size, downloads=downloads)
js = driver.execute_script


def window():
    """The timeline's window in ms (from, to), as the page draws it."""
    return js("return [view.from, view.to]")


def width():
    """The window's width in ms, read at once (today's window moves with the clock every few seconds)."""
    return js("return view.to - view.from")


def rects(selector):
    return js(f"return [...document.querySelectorAll('{selector}')].map((e) => e.getBoundingClientRect().toJSON())")


def timeline_box():
    return js("return document.getElementById('timeline').getBoundingClientRect().toJSON()")


def pointer_drag(x0, x1, shift=False):
    """A drag across the timeline: the mouse on a desktop, a finger on a phone."""
    box = timeline_box()
    y = box["y"] + box["height"] / 2
    if phone:
        browser.touch_drag(driver, (x0, y), (x1, y))
        return
    timeline = driver.find_element(By.ID, "timeline")
    centre = box["x"] + box["width"] / 2
    chain = ActionChains(driver)
    if shift:
        chain.key_down(Keys.SHIFT)
    chain.move_to_element_with_offset(timeline, int(x0 - centre), 0).click_and_hold()
    for i in range(1, 5):
        chain.move_by_offset(int((x1 - x0) / 4), 0)
    chain.release()
    if shift:
        chain.key_up(Keys.SHIFT)
    chain.perform()


def tap(x):
    box = timeline_box()
    if phone:
        browser.touch(driver, "touchStart", [(x, box["y"] + box["height"] / 2)])
        browser.touch(driver, "touchEnd", [])
    else:
        ActionChains(driver).move_to_element_with_offset(
            driver.find_element(By.ID, "timeline"), int(x - box["x"] - box["width"] / 2), 0).click().perform()


def again(action, condition, tries=4, seconds=3):
    """Does `action` until condition() holds, its value (or None): on a phone, Chromium may drop a
    touch that comes right after another, as it waits to tell a tap from a double tap."""
    for _ in range(tries):
        action()
        value = browser.wait(condition, seconds)
        if value:
            return value
    return None


def press(element_id):
    driver.find_element(By.ID, element_id).click()


def playing():
    return js("const v = document.getElementById('player');"
              "return v.currentSrc && v.readyState >= 2 && !v.error ? v.currentSrc : null")


try:
    driver.get(f"{url}/#camera/{camera}")
    # The first view fits the day's recordings: today, from the first to now, with margins; less
    # than the narrowest window (1 min) of them: that window, all of them in it, ending near its right edge.
    browser.wait(lambda: len(rects("#lanes .segment")) >= 1 and width() < 86400e3)
    box, runs = timeline_box(), rects("#lanes .segment")
    from_, to = window()
    now = js("return Date.now()")
    first = js("return view.recordings[0] && view.recordings[0].from")
    left = (runs[0]["x"] - box["x"]) / box["width"] if runs else 1
    right = (box["x"] + box["width"] - runs[-1]["x"] - runs[-1]["width"]) / box["width"] if runs else 1
    floor = to - from_ < 61e3
    checks.add("first-view-fits", runs and first and from_ <= first and to >= now - 6000 and (left < 0.15 or floor and left > 0) and right < 0.15,
               f"window {(to - from_) / 1000:.0f} s{' (the narrowest)' if floor else ''}; recordings start {left:.0%} from the left edge and end {right:.0%} from the right")
    stills = js("return [...document.querySelectorAll('#stills .still')].map((b) => Date.parse(b.dataset.time))")
    checks.add("stills-newest-first", stills and stills == sorted(stills, reverse=True) and now - stills[0] < 15000,
               f"{len(stills)} stills, newest {(now - stills[0]) / 1000:.1f} s ago" if stills else "no stills")
    checks.page(driver, "day", size, folder)

    # Zoom: wheel (around the pointer), buttons, pinch on a phone. A fresh day's first view may be
    # the narrowest window already: wider first. The wheel zooms away from now (today's window
    # follows the clock while it shows now, which would move the time under the pointer).
    span, box = width(), timeline_box()
    if not phone:
        again(lambda: press("zoom-out"), lambda: width() > span * 1.5)
        x = box["x"] + box["width"] * 0.1
        y = int(box["y"] + box["height"] / 2)

        def wheel(dy, name):
            before, wide = js("return timeAt(arguments[0])", x), width()
            ActionChains(driver).scroll_from_origin(ScrollOrigin.from_viewport(int(x), y), 0, dy).perform()
            got = browser.wait(lambda: (lambda w: w if (w > wide * 1.25 if dy > 0 else w < wide * 0.8) else None)(width()), 5)
            moved = abs(js("return timeAt(arguments[0])", x) - before)
            checks.add(name, got and moved < wide * 0.02, f"window {wide / 1000:.0f} s → {got / 1000:.0f} s; time under the pointer moved {moved / 1000:.1f} s" if got else
                       f"the window did not {'widen' if dy > 0 else 'narrow'} (the wheel at {x:.0f},{y} px, the timeline {box['y']:.0f}–{box['y'] + box['height']:.0f} px)")
        wheel(-300, "wheel-zoom-in")
        wheel(300, "wheel-zoom-out")
    else:
        y = box["y"] + box["height"] / 2
        a, b = box["x"] + box["width"] * 0.4, box["x"] + box["width"] * 0.6

        def pinch(apart):
            start = 0 if apart > 0 else 90
            browser.touch(driver, "touchStart", [(a - start, y), (b + start, y)])
            for i in range(1, 7):
                browser.touch(driver, "touchMove", [(a - start - apart * i, y), (b + start + apart * i, y)])
            browser.touch(driver, "touchEnd", [])
        widened = again(lambda: pinch(-15), lambda: (lambda w: w if w[1] - w[0] > span * 1.6 else None)(window()))
        checks.add("pinch-zoom-out", widened, f"window {span / 1000:.0f} s → {(widened[1] - widened[0]) / 1000:.0f} s" if widened else "the window did not widen")
        span = width()
        zoomed = again(lambda: pinch(15), lambda: (lambda w: w if w[1] - w[0] < span * 0.6 else None)(window()))
        checks.add("pinch-zoom-in", zoomed, f"window {span / 1000:.0f} s → {(zoomed[1] - zoomed[0]) / 1000:.0f} s" if zoomed else "the window did not narrow")
    span = width()
    half = again(lambda: press("zoom-in"), lambda: (lambda w: w[1] - w[0] if abs(w[1] - w[0] - max(60e3, span / 2)) < 1000 else None)(window()))
    back = again(lambda: press("zoom-out"), lambda: (lambda w: w[1] - w[0] if abs(w[1] - w[0] - 2 * (half or 0)) < 1000 else None)(window()))
    checks.add("zoom-buttons", half and back, f"+: {span / 1000:.0f} s → {(half or 0) / 1000:.0f} s; −: → {(back or 0) / 1000:.0f} s")

    # Two steps out: recordings in the middle, empty time either side. A drag pans.
    js("zoomAround(view.from + span() / 2, 4)")
    before = window()
    box = timeline_box()
    moved = again(lambda: pointer_drag(box["x"] + box["width"] * 0.6, box["x"] + box["width"] * 0.4),
                  lambda: (lambda w: w if w[0] != before[0] else None)(window()))
    shift = (moved[0] - before[0]) / (before[1] - before[0]) if moved else 0
    checks.add("drag-pan", moved and 0.15 < shift < 0.25 and abs((moved[1] - moved[0]) - (before[1] - before[0])) < 1000,
               f"a drag of a fifth of the width to the left moved the window {shift:.0%} later, its width kept" if moved else "the window did not move")
    # Back to the recordings, with room before them.
    js("fit(); zoomAround(view.from + span() / 2, 2)")

    # A click (tap) in empty time before the first recording plays the first and says so.
    box, runs = timeline_box(), rects("#lanes .segment")
    # What it said and played, seen together (the first recording is 2 s long: the next one soon loads instead).
    said = again(lambda: tap((box["x"] + runs[0]["x"]) / 2), lambda: (lambda text, src: re.search(r"No recording at \d\d:\d\d:\d\d; playing from \d\d:\d\d:\d\d", text)
                                                                       and src and (text, src))(driver.find_element(By.ID, "day-note").text, playing()), 8)
    note, source = said or (driver.find_element(By.ID, "day-note").text, playing())
    checks.add("gap-click-says-so", said and "/api/v1/recordings/" in source, f"said {note!r}, playing {source}")
    # A click inside a recording plays from there, the playhead on it.
    runs = rects("#lanes .segment")
    x = runs[-1]["x"] + runs[-1]["width"] / 2
    at = js("return timeAt(arguments[0])", x)
    head = again(lambda: tap(x), lambda: playing() and js("return Math.abs(view.player.now() - arguments[0]) < 3000", at) and driver.find_element(By.ID, "playhead").is_displayed()
                        and rects("#playhead")[0], seconds=8)
    checks.add("click-plays", head and abs(head["x"] - x) < timeline_box()["width"] * 0.05,
               f"playing {playing()}, playhead {head['x'] - x:+.0f} px from the click" if head else
               f"nothing played: {playing()}, {driver.find_element(By.ID, 'day-note').text!r}, {js('return [view.cursor, view.player.now()]')}")

    # Keyboard: arrows move the playhead, +/− zoom, Home goes to the day's first recording.
    timeline = driver.find_element(By.ID, "timeline")
    timeline.send_keys(Keys.HOME)
    home = browser.wait(lambda: (lambda n: n if n is not None and abs(n - js("return view.recordings[0].from")) < 1500 else None)(js("return view.player.now()")), 10)
    timeline.send_keys(Keys.ARROW_RIGHT)
    right = browser.wait(lambda: (lambda n: n if home and n > home + 500 else None)(js("return view.cursor")), 5)
    span = width()
    timeline.send_keys("+")
    plus = browser.wait(lambda: width() < span * 0.6, 5)
    timeline.send_keys("-")
    minus = browser.wait(lambda: width() > span * 0.9, 5)
    checks.add("timeline-keys", home and right and plus and minus,
               f"Home: {'the first recording' if home else 'no'}; →: {'later' if right else 'no'}; +: {'in' if plus else 'no'}; −: {'out' if minus else 'no'}")

    # A range over the recordings: Shift+drag on a desktop, Select then a drag on a phone.
    js("fit()")
    if phone:
        again(lambda: press("select"), lambda: driver.find_element(By.ID, "select").get_attribute("aria-pressed") == "true")
    runs, box = rects("#lanes .segment"), timeline_box()
    a = max(runs[0]["x"] + 2, box["x"] + box["width"] * 0.3)
    b = min(runs[-1]["x"] + runs[-1]["width"] - 4, box["x"] + box["width"] * 0.7)
    clip = again(lambda: pointer_drag(a, b, shift=True), lambda: driver.find_element(By.ID, "clip").is_displayed() and driver.find_element(By.ID, "clip"))
    range_line = rects("#range")
    button = rects("#clip")
    one_line = range_line and button and range_line[0]["height"] < button[0]["height"] * 1.6
    checks.add("range-one-line", one_line, f"range bar {range_line[0]['height'] if range_line else 0:.0f} px high, its buttons {button[0]['height'] if button else 0:.0f} px")
    file = None
    if clip and clip.is_enabled():
        # A tap just after a drag may be taken for part of it (dropped): tap again until the download starts.
        for attempt in range(5):
            browser.tap(driver, clip) if phone else clip.click()
            if browser.wait(lambda: os.listdir(downloads), 3):
                break
        done = browser.wait(lambda: [f for f in glob.glob(os.path.join(downloads, "*.mp4")) if not f.endswith(".crdownload")], 60)
        file = done[0] if done else None
    frames = browser.decodes(file) if file else 0
    checks.add("range-download", file and frames > 0, f"{file} ({frames} frames decoded)" if file else
               f"no clip downloaded (range {driver.find_element(By.ID, 'range-text').text!r}; {os.listdir(downloads)}; "
               f"the server answers {js('return fetch(`${api}/cameras/${view.camera}/clip.mp4?${query(new Date(view.range.from), new Date(view.range.to))}`).then((r) => r.status)')}; "
               f"{browser.console_errors(driver)})")
    # A range's end handle drags it longer (its start stays).
    before = js("return view.range && [view.range.from, view.range.to]")

    def drag_handle():
        # Where it is now: today's window (and the range on it) moves with the clock while it shows now.
        handle = rects('.handle[data-end="to"]')
        x = handle[0]["x"] + handle[0]["width"] / 2 if handle else 0
        pointer_drag(x, x - timeline_box()["width"] * 0.1)
    longer = before and again(drag_handle,
                              lambda: (lambda r: r if r and abs(r[0] - before[0]) < 1000 and r[1] < before[1] - 1000 else None)(js("return view.range && [view.range.from, view.range.to]")))
    checks.add("range-handles", longer, f"dragging the end handle left: {driver.find_element(By.ID, 'range-text').text!r}" if longer else f"the range stayed {before}")
    # A range over no footage (the empty time before the first recording): no download, and why.
    js("zoomAround(view.from + span() / 2, 4)")
    runs, box = rects("#lanes .segment"), timeline_box()
    disabled = again(lambda: pointer_drag(box["x"] + 4, runs[0]["x"] - 8, shift=True),
                     lambda: "no recording" in driver.find_element(By.ID, "range-text").text and not driver.find_element(By.ID, "clip").is_enabled())
    checks.add("range-empty-disabled", disabled, f"{driver.find_element(By.ID, 'range-text').text!r}; Download {'disabled' if disabled else 'enabled'} ({driver.find_element(By.ID, 'clip').get_attribute('title')})")

    # The stills strip: older ones as it scrolls, still newest first.
    count = len(rects("#stills .still"))
    js("const s = document.getElementById('stills'); s.scrollLeft = s.scrollWidth")
    more = browser.wait(lambda: len(rects("#stills .still")) > count and len(rects("#stills .still")), 10)
    times = js("return [...document.querySelectorAll('#stills .still')].map((b) => Date.parse(b.dataset.time))")
    checks.add("stills-more-on-scroll", more and times == sorted(times, reverse=True) and len(set(times)) == len(times),
               f"{count} stills, {more or count} after scrolling to the end, newest first: {times == sorted(times, reverse=True)}")
    checks.no_error(driver, "day")
finally:
    driver.quit()

# Dark mode: the same view, axe's contrast check in the other colour scheme.
checks.dark(f"{url}/#camera/{camera}", "day", size, lambda d: d.find_elements(By.CSS_SELECTOR, "#lanes .segment") and d.find_elements(By.CSS_SELECTOR, "#stills .still"))
browser.report(checks.seen)
