"""One node's page shows the whole cluster, in headless Chromium as a person would see it: the grid
has every camera of the site, a camera another node records says which node; that camera's day
plays its first recording, fetched from the other node through this one.

Usage: python cluster_check.py URL SCREENSHOT_DIR desktop CAMERAS CAMERA NODE, where CAMERAS is
the site's cameras, comma-separated, and CAMERA one that NODE records and this node never did
(an H.264 camera: its live view, full screen, plays relayed from NODE).
With EVENT (a motion event of NODE with a picture, by its id in the cluster's catalogue), the
review view lists it with NODE's name and picture, and marks it reviewed through this node.
Prints one JSON object (browser.report).
"""
import sys

from selenium.webdriver.common.by import By

import browser

url, folder, size = sys.argv[1].rstrip("/"), sys.argv[2], sys.argv[3]
cameras, camera, node = sorted(sys.argv[4].split(",")), sys.argv[5], sys.argv[6]
event = sys.argv[7] if len(sys.argv) > 7 else None
checks = browser.Checks()
# A video playing: its time goes on within 0.4 s.
PLAYING = """
const v = document.querySelector(arguments[0]);
if (!v || v.readyState < 2 || v.paused || v.error) return null;
const t = v.currentTime;
return new Promise((resolve) => setTimeout(() => resolve(v.currentTime > t + 0.05 ? v.currentTime : null), 400));
"""
driver = browser.start(size)
js = driver.execute_script

try:
    driver.get(f"{url}/")
    cards = lambda: sorted(c.get_attribute("data-camera") for c in driver.find_elements(By.CSS_SELECTOR, "#grid article.camera"))
    browser.wait(lambda: cards() == cameras)
    checks.add("cluster-grid", cards() == cameras, f"the grid shows {cards()}, the site has {cameras}")
    facts = lambda: driver.find_element(By.CSS_SELECTOR, f'#grid article.camera[data-camera="{camera}"] .facts').text
    browser.wait(lambda: f"on {node}" in facts())
    checks.add("cluster-node-shown", f"on {node}" in facts(), f"{camera}'s card says: {facts()}")
    checks.page(driver, "cluster-grid", size, folder)
    first, times = browser.play_first_recording(driver, f"{url}/#camera/{camera}")
    checks.add("cluster-plays", times and "/api/v1/cluster/recordings/" in first, browser.played_detail(first, times, js))
    driver.get(f"{url}/#live/{camera}")
    playing = browser.wait(lambda: js(PLAYING, "#full-box video"), 30)
    live = js("const b = document.querySelector('#full-box'); return b && b.dataset.live")
    checks.add("cluster-live", bool(playing) and live == "mse", f"{camera} full screen: {live}, playing at {playing}")
    if event:
        driver.get(f"{url}/#review")
        item = f"#event-{event}"
        present = lambda: js("return !!document.querySelector(arguments[0])", item)
        browser.wait(present, 30)
        what = js("const li = document.querySelector(arguments[0]); return li ? li.querySelector('.what').textContent : ''", item)
        checks.add("cluster-review-listed", present() and f"· {node}" in what, f"event {event} listed: {present()}, says: {what}")
        loaded = lambda: js("const img = document.querySelector(arguments[0] + ' img'); return !!img && img.complete && img.naturalWidth > 0"
                            " && img.src.includes('/api/v1/cluster/events/')", item)
        browser.wait(loaded, 20)
        src = js("const i = document.querySelector(arguments[0] + ' img'); return i && i.src", item)
        checks.add("cluster-review-picture", loaded(), f"its picture: {src}")
        driver.find_element(By.CSS_SELECTOR, item).click()
        browser.wait(lambda: driver.find_element(By.ID, "review-toggle").is_displayed(), 10)
        driver.find_element(By.ID, "review-toggle").click()
        marked = lambda: js("const li = document.querySelector(arguments[0]); return !!li && li.classList.contains('reviewed')", item)
        browser.wait(marked, 10)
        checks.add("cluster-review-marked", marked(), f"shown reviewed: {marked()}")
    checks.no_error(driver, "cluster")
finally:
    driver.quit()
browser.report(checks.seen)
