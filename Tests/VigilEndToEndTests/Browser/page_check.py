"""Drives Vigil's page in headless Chromium, as a person would, and prints what it saw as JSON.

Usage: /usr/bin/python3 page_check.py URL DOWNLOAD_DIR CAMERA[,CAMERA…]
Needs Debian's chromium, chromium-driver and python3-selenium (Scripts/setup installs them).
Every check is reported, never asserted here: the Swift test decides.
"""
import glob
import hashlib
import json
import os
import sys
import time

from selenium import webdriver
from selenium.webdriver.chrome.service import Service
from selenium.webdriver.common.action_chains import ActionChains
from selenium.webdriver.common.by import By
from selenium.webdriver.support.ui import Select


def wait(condition, seconds=20.0):
    deadline = time.monotonic() + seconds
    while time.monotonic() < deadline:
        try:
            value = condition()
            if value:
                return value
        except Exception:
            pass
        time.sleep(0.2)
    return None


def main():
    url, downloads, cameras = sys.argv[1], sys.argv[2], sys.argv[3].split(",")
    options = webdriver.ChromeOptions()
    for flag in ["--headless=new", "--no-sandbox", "--disable-gpu", "--disable-dev-shm-usage",
                 "--window-size=1280,1000", "--autoplay-policy=no-user-gesture-required"]:
        options.add_argument(flag)
    options.binary_location = "/usr/bin/chromium"
    options.add_experimental_option("prefs", {"download.default_directory": downloads,
                                              "download.prompt_for_download": False})
    driver = webdriver.Chrome(service=Service("/usr/bin/chromedriver"), options=options)
    seen = {"grid": [], "live_changed": False, "segments": 0, "stills": 0, "events": 0, "played": None,
            "clip": None, "errors": []}
    try:
        driver.get(url)
        # The grid: one card per configured camera.
        cards = wait(lambda: len(driver.find_elements(By.CSS_SELECTOR, "#grid .camera")) >= len(cameras)
                     and driver.find_elements(By.CSS_SELECTOR, "#grid .camera"))
        seen["grid"] = [c.get_attribute("data-camera") for c in cards or []]
        # The live picture changes: two pictures of the first camera's player (a video through
        # MSE, or an MJPEG image) a second and a half apart, once it plays.
        wait(lambda: driver.execute_script("return ['mse', 'mjpeg'].includes(document.querySelector('#grid .camera .media').dataset.live)"))
        image = driver.find_element(By.CSS_SELECTOR, "#grid .camera .media > video, #grid .camera .media > img")
        if wait(lambda: driver.execute_script("return arguments[0].naturalWidth > 0 || arguments[0].videoWidth > 0", image)):
            first = hashlib.sha256(image.screenshot_as_png).hexdigest()
            seen["live_changed"] = bool(wait(lambda: hashlib.sha256(image.screenshot_as_png).hexdigest() != first, 8))
        # A camera's day: the timeline lists the recordings, the strip the stills.
        driver.find_element(By.CSS_SELECTOR, f'#grid .camera[data-camera="{cameras[0]}"]').click()
        # Ten minutes across the page: a few seconds of recordings are wide enough to drag over.
        wait(lambda: driver.find_element(By.ID, "day").is_displayed())
        Select(driver.find_element(By.ID, "span")).select_by_value("600")
        wait(lambda: len(driver.find_elements(By.CSS_SELECTOR, "#lanes .segment")) >= 2)
        seen["segments"] = len(driver.find_elements(By.CSS_SELECTOR, "#lanes .segment"))
        seen["stills"] = len(driver.find_elements(By.CSS_SELECTOR, "#stills .still img"))
        # Motion events (the first camera has [[motion]]) are marked above the recordings.
        wait(lambda: len(driver.find_elements(By.CSS_SELECTOR, "#lanes .event")) >= 1, 5)
        seen["events"] = len(driver.find_elements(By.CSS_SELECTOR, "#lanes .event"))
        segments = driver.find_elements(By.CSS_SELECTOR, "#lanes .segment")
        timeline = driver.find_element(By.ID, "timeline")
        if segments:
            # Click inside the first recording: the player plays it.
            box = timeline.rect
            first, last = segments[0].rect, segments[-1].rect
            x = first["x"] + max(1, first["width"] / 2) - (box["x"] + box["width"] / 2)
            ActionChains(driver).move_to_element_with_offset(timeline, int(x), 0).click().perform()
            played = wait(lambda: driver.execute_script(
                "const v = document.getElementById('player');"
                "return v.currentSrc && v.readyState >= 2 && !v.error ? v.currentSrc : null"), 15)
            error = driver.execute_script("const v = document.getElementById('player'); return v.error && v.error.message")
            seen["played"] = played
            if error:
                seen["errors"].append(f"video: {error}")
            # Drag across the recordings: the range's clip downloads.
            start = first["x"] - (box["x"] + box["width"] / 2)
            end = last["x"] + last["width"] - (box["x"] + box["width"] / 2)
            ActionChains(driver).move_to_element_with_offset(timeline, int(start), 0).click_and_hold() \
                .move_by_offset(int((end - start) / 2), 0).move_by_offset(int((end - start) / 2), 0).release().perform()
            link = wait(lambda: driver.find_element(By.ID, "clip").is_displayed() and driver.find_element(By.ID, "clip"))
            if link:
                link.click()
                done = wait(lambda: [f for f in glob.glob(os.path.join(downloads, "*.mp4"))
                                     if not os.path.exists(f + ".crdownload")], 60)
                seen["clip"] = done[0] if done else None
        logs = driver.execute_script("return document.getElementById('error').hidden ? null : document.getElementById('error').textContent")
        if logs:
            seen["errors"].append(f"page: {logs}")
    finally:
        driver.quit()
    print(json.dumps(seen))


main()
