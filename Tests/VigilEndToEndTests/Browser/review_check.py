"""The review view (#review) of Vigil's page, driven as a person would in headless Chromium: the
events newest first with their pictures, each filter (kept in the address), opening one (plays
from its pre-roll, the event marked), the keys j/k, arrows, space and r, and "reviewed" kept
after a reload (undone when the server refuses).

Usage: python review_check.py URL SCREENSHOT_DIR SIZE (desktop or phone). Prints one JSON object
(browser.report): every check's name, ok and what was seen, and the screenshots
(review-SIZE.png). Needs at least two events (j/k); without GET /api/v1/events on the server,
the checks that need it say "API missing".
"""
import datetime
import json
import sys
import urllib.error
import urllib.request

from selenium.webdriver.common.action_chains import ActionChains
from selenium.webdriver.common.by import By
from selenium.webdriver.support.ui import Select

import browser

url, folder, size = sys.argv[1].rstrip("/"), sys.argv[2], sys.argv[3]
checks = browser.Checks()
NEEDS_API = ["review-list", "review-filter-camera", "review-filter-day", "review-filter-unreviewed", "review-opens-preroll",
             "review-marker", "review-keys-jk", "review-keys-arrows", "review-key-space", "review-key-r",
             "review-reviewed-kept", "review-undo-on-error"]


def events(query=""):
    """The server's first page of events for a query of the page's address (camera, day, unreviewed)."""
    params = dict(p.split("=", 1) for p in query.split("&") if p)
    args = {"limit": "30"}
    if "camera" in params:
        args["camera"] = params["camera"]
    if "day" in params:
        day = datetime.datetime.strptime(params["day"], "%Y-%m-%d").astimezone()
        args["from"], args["to"] = day.isoformat(), (day + datetime.timedelta(days=1)).isoformat()
    if params.get("unreviewed") == "1":
        args["unreviewed"] = "true"
    with urllib.request.urlopen(f"{url}/api/v1/events?{urllib.parse.urlencode(args)}") as answer:
        return json.load(answer)["events"]


def answers():
    """Whether the server has the events route: True, False (404), or None (no answer yet)."""
    try:
        events()
        return True
    except urllib.error.HTTPError as error:
        return error.code != 404
    except OSError:
        return None


api = browser.wait(lambda: answers() is not None, 20) and answers()
# Two events at least, for next/previous.
if api:
    browser.wait(lambda: len(events()) >= 2, 60)
driver = browser.start(size)
js = driver.execute_script


def shown():
    """The list as shown: (id, camera, reviewed, picture) for each item; picture is None without
    one, else whether it shows (loaded, or not loaded yet where it is out of sight: they load lazily)."""
    return js("return [...document.querySelectorAll('#review-list li')].map((li) => { const img = li.querySelector('img'), box = img && img.getBoundingClientRect();"
              " return [Number(li.id.slice(6)), li.querySelector('b').textContent, li.classList.contains('reviewed'),"
              " img ? (img.complete && img.naturalWidth > 0) || box.top > innerHeight || box.bottom > li.parentElement.parentElement.getBoundingClientRect().bottom : null] })")


def listed(query):
    """Waits until the list shows the server's answer to `query` (ids in order; events that began
    after the page asked are left out); what it shows, and what the server lists."""
    def same():
        # The list of this query, not the one before it (the page changes lists on hashchange, after the click).
        if not js("return review.key === reviewURL(new URLSearchParams(arguments[0]))", query):
            return None
        shown_ids, want = [i for i, *_ in shown()], events(query)
        newest = shown_ids and next((e["start"] for e in want if e["id"] == shown_ids[0]), None)
        want = [e["id"] for e in want if not newest or e["start"] <= newest]
        empty = not want and "No events" in driver.find_element(By.ID, "review-more").text
        return (empty or (want and shown_ids[:len(want)] == want)) and (shown(), want)
    return browser.wait(same, 20) or (None, [e["id"] for e in events(query)])


def selected():
    return js("return [...document.querySelectorAll('#review-list li')].findIndex((li) => li.getAttribute('aria-selected') === 'true')")


def keys(text):
    ActionChains(driver).send_keys(text).perform()


def item(index):
    return driver.find_elements(By.CSS_SELECTOR, "#review-list li")[index]


def reviewed(index):
    return js("const li = document.querySelectorAll('#review-list li')[arguments[0]]; return li.classList.contains('reviewed') && li.textContent.includes('reviewed')", index)


def server_reviewed(event_id):
    return next((e["reviewed"] for e in events() if e["id"] == event_id), None)


try:
    driver.get(f"{url}/#review")
    browser.wait(lambda: driver.find_elements(By.CSS_SELECTOR, "#review-list li") or not driver.find_element(By.ID, "error").is_displayed() is False, 10)
    if not api:
        for name in NEEDS_API:
            checks.add(name, False, "API missing: GET /api/v1/events answers 404")
        checks.page(driver, "review", size, folder)
    else:
        # Newest first, each with its picture, as the server lists them.
        got, want = listed("")
        starts = [e["start"] for e in events()]
        got = browser.wait(lambda: (lambda s: s if all(p is not False for *_, p in s) else None)(shown()), 10) or got
        pictures = [p for *_, p in got or []]
        with_thumbnails = sum(1 for e in events() if e["thumbnail"])
        checks.add("review-list", got and starts == sorted(starts, reverse=True) and with_thumbnails and pictures.count(True) == with_thumbnails,
                   f"{len(got or [])} events shown of {len(want)}, newest first: {starts == sorted(starts, reverse=True)}; "
                   f"{pictures.count(True)} pictures shown, {with_thumbnails} events have one")

        # Opening one plays it from 5 s before its start, its span marked under the player.
        opened = shown()[0][0]
        item(0).click()
        first = next(e for e in events() if e["id"] == opened)
        start = datetime.datetime.fromisoformat(first["start"].replace("Z", "+00:00")).timestamp() * 1000
        # Playing: not before the page's seek to the pre-roll (readyState may reach 2 before its loadedmetadata runs).
        began = browser.wait(lambda: js("const v = document.getElementById('review-video');"
                                        "return v.currentSrc && v.readyState >= 2 && !v.paused && !v.seeking && review.player.playing ? [review.player.now(), review.player.recordings[0].from] : null"), 15)
        if began:
            now, earliest = began
            expected = max(start - 5000, earliest)
            checks.add("review-opens-preroll", -500 < now - expected < 2500,
                       f"playing from {(now - start) / 1000:+.1f} s of the event's start ({(expected - start) / 1000:+.1f} s expected: its pre-roll, or the first recording)")
        else:
            checks.add("review-opens-preroll", False, "the player did not start")
        mark = js("const m = document.getElementById('review-mark').getBoundingClientRect(), b = document.getElementById('review-bar').getBoundingClientRect();"
                  "return [(m.left - b.left) / b.width, m.width / b.width]")
        at = js("return parseFloat(document.getElementById('review-now').style.left)")
        moved = browser.wait(lambda: js("return parseFloat(document.getElementById('review-now').style.left)") > at, 10)
        checks.add("review-marker", mark[1] > 0 and mark[0] > 0 and moved,
                   f"the event spans {mark[0]:.0%}–{mark[0] + mark[1]:.0%} of the bar; the current time {'moves' if moved else 'does not move'} along it")
        checks.page(driver, "review", size, folder)

        # Keys: j/k, arrows, space, r.
        count = len(shown())
        if count >= 2:
            keys("j")
            second = shown()[1]
            down = browser.wait(lambda: selected() == 1 and f"{second[1]}, motion at" in driver.find_element(By.ID, "review-info").text, 5)
            keys("k")
            up = browser.wait(lambda: selected() == 0, 5)
            checks.add("review-keys-jk", down and up, f"j: item {1 if down else selected()} selected and opened; k: back to {0 if up else selected()}")
            keys("\ue015")  # ArrowDown
            down = browser.wait(lambda: selected() == 1, 5)
            keys("\ue013")  # ArrowUp
            up = browser.wait(lambda: selected() == 0, 5)
            checks.add("review-keys-arrows", down and up, f"↓: {'next' if down else 'no'}; ↑: {'previous' if up else 'no'}")
        else:
            checks.add("review-keys-jk", False, f"needs two events, {count} listed")
            checks.add("review-keys-arrows", False, f"needs two events, {count} listed")
        # The event opened last is playing (its recordings fetched) before space.
        browser.wait(lambda: "(from " in driver.find_element(By.ID, "review-info").text and js("return !document.getElementById('review-video').paused"), 10)
        keys(" ")
        paused = browser.wait(lambda: js("return document.getElementById('review-video').paused"), 5)
        keys(" ")
        playing = browser.wait(lambda: js("return !document.getElementById('review-video').paused"), 5)
        checks.add("review-key-space", paused and playing, f"space: {'paused' if paused else 'not paused'}, again: {'playing' if playing else 'not playing'} " + str(js("const v = document.getElementById('review-video'); return [v.currentTime, v.ended, v.readyState, v.paused, document.activeElement.tagName, review.player.recordings.length]")))

        index = max(0, selected())
        event_id, was = shown()[index][0], reviewed(index)
        keys("r")
        at_once = js("return arguments[0]", reviewed(index)) != was
        saved = browser.wait(lambda: server_reviewed(event_id) == (not was), 5)
        pressed = driver.find_element(By.ID, "review-toggle").get_attribute("aria-pressed")
        checks.add("review-key-r", at_once and saved and pressed == str(not was).lower(),
                   f"r: shown {'at once' if at_once else 'late or not'}, the server says reviewed={server_reviewed(event_id)}, the button aria-pressed={pressed}")
        # Kept after a reload.
        driver.refresh()
        browser.wait(lambda: shown(), 10)
        kept = browser.wait(lambda: next((r for i, _, r, _ in shown() if i == event_id), None) == (not was), 10)
        checks.add("review-reviewed-kept", kept, f"after a reload the event is {'reviewed' if not was else 'not reviewed'}: {bool(kept)}")

        # Not yet reviewed: the one just reviewed is not listed.
        driver.find_element(By.ID, "review-unreviewed").click()
        got, want = listed("unreviewed=1")
        checks.add("review-filter-unreviewed", "unreviewed=1" in driver.current_url and got is not None and all(not r for _, _, r, _ in got)
                   and (was or event_id not in [i for i, *_ in got]),
                   f"address {driver.current_url.split('#')[1]}; {len(got or [])} listed, none reviewed: {got is not None and all(not r for _, _, r, _ in got)}")
        driver.find_element(By.ID, "review-unreviewed").click()
        listed("")
        # Put it back as it was, and see that a refused change is undone.
        at = browser.wait(lambda: next((i + 1 for i, s in enumerate(shown()) if s[0] == event_id), None), 20)
        if at:
            item(at - 1).click()
            keys("r")
            browser.wait(lambda: server_reviewed(event_id) == was, 5)
            js("window.realFetch = window.fetch; window.fetch = (path, init) => String(path).endsWith('/reviewed') ?"
               " new Promise((resolve) => setTimeout(() => resolve(new Response('{\"error\":\"refused by the check\"}', {status: 500})), 300)) : realFetch(path, init)")
            index = selected()
            # Every state the item shows, however short.
            js("window.states = []; const li = document.querySelectorAll('#review-list li')[arguments[0]];"
               "new MutationObserver(() => states.push(li.classList.contains('reviewed'))).observe(li, {attributes: true, subtree: true, childList: true, characterData: true})", index)
            keys("r")
            flipped = browser.wait(lambda: (not was) in js("return states"), 5)
            undone = browser.wait(lambda: reviewed(index) == was and driver.find_element(By.ID, "error").is_displayed(), 5)
            checks.add("review-undo-on-error", flipped and undone and server_reviewed(event_id) == was,
                       f"shown at once: {flipped}; undone with the error {driver.find_element(By.ID, 'error').text!r}: {bool(undone)}")
        else:
            checks.add("review-undo-on-error", False, f"the event reviewed before ({event_id}) is not listed again: {shown()}")
        js("if (window.realFetch) window.fetch = window.realFetch; document.getElementById('error').hidden = true")

        # Camera: the second camera only.
        cameras = [o.get_attribute("value") for o in driver.find_elements(By.CSS_SELECTOR, "#review-camera option") if o.get_attribute("value")]
        other = cameras[-1] if cameras else "yard"
        Select(driver.find_element(By.ID, "review-camera")).select_by_value(other)
        got, want = listed(f"camera={other}")
        checks.add("review-filter-camera", f"camera={other}" in driver.current_url and got is not None and all(c == other for _, c, _, _ in got),
                   f"address {driver.current_url.split('#')[1]}; {len(got or [])} listed, all of {other}: {got is not None}")
        Select(driver.find_element(By.ID, "review-camera")).select_by_value("")
        listed("")
        # Day: yesterday (none of this run's events), then today (all).
        today = datetime.date.today()
        pick = "const d = document.getElementById('review-day'); d.value = arguments[0]; d.dispatchEvent(new Event('change', {bubbles: true}))"
        js(pick, str(today - datetime.timedelta(days=1)))
        before, _ = listed(f"day={today - datetime.timedelta(days=1)}")
        address = driver.current_url.split("#")[1]
        js(pick, str(today))
        on_day, want = listed(f"day={today}")
        checks.add("review-filter-day", f"day={today - datetime.timedelta(days=1)}" in address and before is not None and on_day and len(on_day) >= len(want),
                   f"address {address}: {len(before) if before is not None else 'not'} listed; today: {len(on_day or [])} of {len(want)}")
    # Layout: side by side on a desktop, stacked (the player above the list) on a phone.
    player, items = js("return [document.querySelector('.review-player').getBoundingClientRect().toJSON(), document.querySelector('.review-list').getBoundingClientRect().toJSON()]")
    stacked = player["bottom"] <= items["top"] + 1
    beside = items["right"] <= player["left"] + 1
    checks.add("review-layout", stacked if size == "phone" else beside,
               f"player {player['x']:.0f},{player['y']:.0f} {player['width']:.0f}×{player['height']:.0f}; list {items['x']:.0f},{items['y']:.0f} {items['width']:.0f} wide: {'stacked' if stacked else 'side by side' if beside else 'overlapping'}")
    checks.console(driver, "review")
finally:
    driver.quit()

checks.dark(f"{url}/#review", "review", size, lambda d: d.find_elements(By.CSS_SELECTOR, "#review-list li") or d.find_element(By.ID, "error").is_displayed())
browser.report(checks.seen)
