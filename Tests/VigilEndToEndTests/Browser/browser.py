"""What the page's browser checks share: a headless Chromium at desktop or phone size, waiting,
screenshots, axe-core's accessibility check and the page's console errors.

The checks run with the virtual environment that Scripts/setup --tests makes
(~/.cache/vigil/browser: Debian's selenium and chromium, PyPI's axe-selenium-python).
Nothing here asserts: every check reports what it saw, and the Swift test decides.
"""
import json
import os
import time

from selenium import webdriver
from selenium.webdriver.chrome.service import Service

# CSS pixels of the window: a laptop, and a phone held upright (with touch and a mobile user agent).
SIZES = {"desktop": (1280, 900), "phone": (390, 844)}
PHONE_AGENT = ("Mozilla/5.0 (Linux; Android 13; Pixel 7) AppleWebKit/537.36 (KHTML, like Gecko) "
               "Chrome/120.0 Mobile Safari/537.36")


def start(size="desktop", downloads=None, dark=False):
    """A headless Chromium at `size` ("desktop" or "phone"), in dark mode if asked."""
    width, height = SIZES[size]
    options = webdriver.ChromeOptions()
    for flag in ["--headless=new", "--no-sandbox", "--disable-gpu", "--disable-dev-shm-usage",
                 "--autoplay-policy=no-user-gesture-required", "--hide-scrollbars"]:
        options.add_argument(flag)
    if dark:
        options.add_argument("--force-dark-mode")
        options.add_argument("--blink-settings=preferredColorScheme=0")
    if size == "phone":
        options.add_experimental_option("mobileEmulation", {
            "deviceMetrics": {"width": width, "height": height, "pixelRatio": 2.0, "touch": True},
            "userAgent": PHONE_AGENT})
    else:
        options.add_argument(f"--window-size={width},{height}")
    options.binary_location = "/usr/bin/chromium"
    if downloads:
        options.add_experimental_option("prefs", {"download.default_directory": downloads,
                                                  "download.prompt_for_download": False})
    options.set_capability("goog:loggingPrefs", {"browser": "ALL"})
    driver = webdriver.Chrome(service=Service("/usr/bin/chromedriver"), options=options)
    if size == "desktop":
        # --window-size is the outer window: make the page's viewport the stated size.
        inner = driver.execute_script("return [window.innerWidth, window.innerHeight]")
        driver.set_window_size(2 * width - inner[0], 2 * height - inner[1])
    return driver


def wait(condition, seconds=20.0):
    """condition()'s first truthy value within `seconds`, else None (exceptions count as not yet)."""
    deadline = time.monotonic() + seconds
    while time.monotonic() < deadline:
        try:
            value = condition()
            if value:
                return value
        except Exception:
            pass
        time.sleep(0.1)
    return None


def screenshot(driver, folder, name):
    """Saves the viewport as FOLDER/NAME.png and returns its path (None without a folder)."""
    if not folder:
        return None
    os.makedirs(folder, exist_ok=True)
    path = os.path.join(folder, f"{name}.png")
    driver.save_screenshot(path)
    return path


def accessibility(driver):
    """axe-core's serious and critical violations on the page as it is now."""
    from axe_selenium_python import Axe
    axe = Axe(driver)
    axe.inject()
    results = axe.run()
    return [{"id": v["id"], "impact": v["impact"], "help": v["help"],
             "targets": [" ".join(map(str, n.get("target", []))) for n in v.get("nodes", [])][:5]}
            for v in results.get("violations", []) if v.get("impact") in ("serious", "critical")]


def console_errors(driver):
    """The page's console errors since the last call (failed loads such as a missing favicon too)."""
    return [entry["message"] for entry in driver.get_log("browser") if entry.get("level") == "SEVERE"]


def report(seen):
    """Prints what was seen as one JSON object, for the Swift test."""
    print(json.dumps(seen))


def outside_loads(driver):
    """Every resource the page loaded from anywhere but its own server (it must load none)."""
    return driver.execute_script(
        "return performance.getEntriesByType('resource').map(e => e.name)"
        ".filter(u => !u.startsWith(location.origin) && !u.startsWith('blob:') && !u.startsWith('data:'))")


class Checks:
    """The checks a script records, and its screenshots, reported as one JSON object at the end."""

    def __init__(self):
        self.seen = {"checks": [], "screenshots": []}

    def add(self, name, ok, detail):
        self.seen["checks"].append({"name": name, "ok": bool(ok), "detail": str(detail)[:600]})
        return ok

    def page(self, driver, view, size, folder, dark=False):
        """axe's check for the view as it is now (`VIEW-axe`, or `VIEW-axe-dark`) and its screenshot."""
        violations = accessibility(driver)
        self.add(f"{view}-axe{'-dark' if dark else ''}", not violations, violations or "no serious or critical violation")
        if not dark:
            path = screenshot(driver, folder, f"{view}-{size}")
            if path:
                self.seen["screenshots"].append(path)

    def dark(self, address, view, size, ready):
        """`VIEW-axe-dark`: a browser in dark mode opens `address` and waits for ready(driver) first."""
        driver = start(size, dark=True)
        try:
            driver.get(address)
            wait(lambda: ready(driver))
            self.page(driver, view, size, None, dark=True)
        finally:
            driver.quit()

    def console(self, driver, view):
        errors = console_errors(driver)
        self.add(f"{view}-console", not errors, errors or "no console error")

    def no_error(self, driver, view):
        """`VIEW-no-error` (the page shows no error) and `VIEW-console` (its console has none)."""
        shown = driver.execute_script(
            "return document.getElementById('error').hidden ? '' : document.getElementById('error').textContent")
        self.add(f"{view}-no-error", not shown, shown or "no error shown")
        self.console(driver, view)


def touch(driver, kind, points):
    """One CDP touch event: kind touchStart/touchMove/touchEnd, points [(x, y), …] in CSS pixels."""
    driver.execute_cdp_cmd("Input.dispatchTouchEvent", {
        "type": kind, "touchPoints": [{"x": x, "y": y, "id": i} for i, (x, y) in enumerate(points)]})


def touch_drag(driver, start, end, steps=8):
    """One finger from `start` to `end` in `steps` moves."""
    touch(driver, "touchStart", [start])
    for i in range(1, steps + 1):
        touch(driver, "touchMove", [(start[0] + (end[0] - start[0]) * i / steps, start[1] + (end[1] - start[1]) * i / steps)])
    touch(driver, "touchEnd", [])


def play_first_recording(driver, address):
    """Opens a camera's day at `address`, clicks its first recording on the timeline as a person
    would, and waits for the player to play it. Returns (its URL, [first time, last time or
    "ended"]); the times are None when it did not play. Every time the player reports is
    collected (a 1 s recording may end and the page go on to the next one between two looks)."""
    from selenium.webdriver.common.action_chains import ActionChains
    from selenium.webdriver.common.by import By
    js = driver.execute_script
    driver.get(address)
    wait(lambda: driver.find_elements(By.CSS_SELECTOR, "#lanes .segment"))
    timeline = driver.find_element(By.ID, "timeline")

    def click_first():
        first, line = driver.find_elements(By.CSS_SELECTOR, "#lanes .segment")[0].rect, timeline.rect
        x = first["x"] + first["width"] / 2
        ActionChains(driver).move_to_element_with_offset(timeline, int(x - line["x"] - line["width"] / 2), 0).click().perform()

    js("window.seen = []; const v = document.getElementById('player');"
       "v.addEventListener('timeupdate', () => { if (!v.error) window.seen.push([v.currentSrc, v.currentTime]) });"
       "v.addEventListener('ended', () => window.seen.push([v.currentSrc, 'ended']))")
    first = None
    for _ in range(4):
        click_first()
        first = wait(lambda: js("return window.seen.length ? window.seen[0][0] : null"), 5)
        if first:
            break

    # It played: its time moved on, or it played to its end (a 1 s recording clicked near its end).
    def played(reports):
        numbers = [t for t in reports if t != "ended"]
        return numbers and ("ended" in reports or max(numbers) > numbers[0]) and [numbers[0], "ended" if "ended" in reports else max(numbers)]

    times = wait(lambda: played(js("return window.seen.filter(s => s[0] === arguments[0]).map(s => s[1])", first)), 20) if first else None
    return first, times


def played_detail(first, times, js):
    """What `play_first_recording` saw, as a check's detail."""
    if times:
        return f"{first} played from {times[0]:.2f} s to {times[-1] if times[-1] == 'ended' else f'{times[-1]:.2f} s'}"
    return f"the player did not play: {first}; seen {js('return window.seen')}"


def decodes(path):
    """ffprobe's count of the video frames in the file at `path` (0 when it does not decode)."""
    import subprocess
    run = subprocess.run(["ffprobe", "-v", "error", "-count_frames", "-select_streams", "v:0", "-show_entries",
                          "stream=nb_read_frames", "-of", "csv=p=0", path], capture_output=True, text=True, timeout=60)
    try:
        return int(run.stdout.strip().split(",")[0]) if run.returncode == 0 else 0
    except ValueError:
        return 0


def tap(driver, element):
    """A finger's tap on the element's centre (on a phone, where a mouse click after touches may be dropped)."""
    box = driver.execute_script("return arguments[0].getBoundingClientRect().toJSON()", element)
    point = (box["x"] + box["width"] / 2, box["y"] + box["height"] / 2)
    touch(driver, "touchStart", [point])
    touch(driver, "touchEnd", [])
