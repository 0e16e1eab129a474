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

    state = "return (v => v.currentSrc && v.readyState >= 2 && !v.error ? [v.currentSrc, v.currentTime] : null)(document.getElementById('player'))"
    started = None
    for _ in range(4):
        click_first()
        started = browser.wait(lambda: js(state), 5)
        if started:
            break
    moved = started and browser.wait(lambda: (lambda now: now and now[0] == started[0] and now[1] > started[1] + 0.3 and now)(js(state)), 20)
    checks.add("archive-plays", moved and "/api/v1/recordings/" in moved[0],
               f"{moved[0]} played from {started[1]:.2f} s to {moved[1]:.2f} s" if moved else f"the player did not play: {started}")
    shown = js("return document.getElementById('error').hidden ? '' : document.getElementById('error').textContent")
    checks.add("archive-no-error", not shown, shown or "no error shown")
    checks.console(driver, "archive")
finally:
    driver.quit()
browser.report(checks.seen)
