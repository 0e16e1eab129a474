"""A recording kept only in the [archive] bucket, played from Vigil's page in headless Chromium as
a person would: the camera's day, a click on its first recording, the player plays it (its time
moves on, no error).

Usage: python archive_check.py URL SCREENSHOT_DIR desktop CAMERA. Prints one JSON object
(browser.report); the detail of `archive-plays` names the file's URL.
"""
import sys

from selenium.webdriver.common.action_chains import ActionChains
from selenium.webdriver.common.by import By

import browser

url, folder, size, camera = sys.argv[1].rstrip("/"), sys.argv[2], sys.argv[3], sys.argv[4]
checks = browser.Checks()
driver = browser.start(size)
js = driver.execute_script

try:
    driver.get(f"{url}/#camera/{camera}")
    browser.wait(lambda: driver.find_elements(By.CSS_SELECTOR, "#lanes .segment"))
    timeline = driver.find_element(By.ID, "timeline")

    def click_first():
        # A click on the first recording (the oldest: only in the bucket by now) plays it.
        first, line = driver.find_elements(By.CSS_SELECTOR, "#lanes .segment")[0].rect, timeline.rect
        x = first["x"] + first["width"] / 2
        ActionChains(driver).move_to_element_with_offset(timeline, int(x - line["x"] - line["width"] / 2), 0).click().perform()

    # Every time the player reports while it plays (a 1 s recording may end and the page go on to
    # the next one between two looks, so the reports are collected, not sampled).
    js("window.seen = []; const v = document.getElementById('player');"
       "v.addEventListener('timeupdate', () => { if (!v.error) window.seen.push([v.currentSrc, v.currentTime]) });"
       "v.addEventListener('ended', () => window.seen.push([v.currentSrc, 'ended']))")
    first = None
    for _ in range(4):
        click_first()
        first = browser.wait(lambda: js("return window.seen.length ? window.seen[0][0] : null"), 5)
        if first:
            break
    # It played: its time moved on, or it played to its end (a 1 s recording clicked near its end).
    def played(reports):
        numbers = [t for t in reports if t != "ended"]
        return numbers and ("ended" in reports or max(numbers) > numbers[0]) and [numbers[0], "ended" if "ended" in reports else max(numbers)]

    times = browser.wait(lambda: played(js("return window.seen.filter(s => s[0] === arguments[0]).map(s => s[1])", first)), 20) if first else None
    checks.add("archive-plays", times and "/api/v1/recordings/" in first,
               f"{first} played from {times[0]:.2f} s to {times[-1] if times[-1] == 'ended' else f'{times[-1]:.2f} s'}" if times else f"the player did not play: {first}; seen {js('return window.seen')}")
    shown = js("return document.getElementById('error').hidden ? '' : document.getElementById('error').textContent")
    checks.add("archive-no-error", not shown, shown or "no error shown")
    checks.console(driver, "archive")
finally:
    driver.quit()
browser.report(checks.seen)
