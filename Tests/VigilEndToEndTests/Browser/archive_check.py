"""A recording kept only in the [archive] bucket, played from Vigil's page in headless Chromium as
a person would: the camera's day, a click on its first recording, the player plays it (its time
moves on, no error).

Usage: python archive_check.py URL SCREENSHOT_DIR desktop CAMERA. Prints one JSON object
(browser.report); the detail of `archive-plays` names the file's URL.
"""
import sys

import browser

url, folder, size, camera = sys.argv[1].rstrip("/"), sys.argv[2], sys.argv[3], sys.argv[4]
checks = browser.Checks()
driver = browser.start(size)
js = driver.execute_script

try:
    first, times = browser.play_first_recording(driver, f"{url}/#camera/{camera}")
    checks.add("archive-plays", times and "/api/v1/recordings/" in first,
               browser.played_detail(first, times, js))
    checks.no_error(driver, "archive")
finally:
    driver.quit()
browser.report(checks.seen)
