"""The page as an installable app, in headless Chromium: its manifest and icons as Chromium reads
them, the favicon, dark mode from the system setting, logging in and out with a token, and the
keyboard reaching every control of the header.

Usage: ~/.cache/vigil/browser/bin/python tidy_check.py URL SCREENSHOT_DIR SIZE TOKEN
URL: a vigil with a token ([http] token_file). Prints one JSON object.
"""
import os
import sys

from selenium.webdriver.common.action_chains import ActionChains
from selenium.webdriver.common.by import By
from selenium.webdriver.common.keys import Keys

sys.path.insert(0, os.path.dirname(os.path.abspath(__file__)))
import browser  # noqa: E402


def main():
    url, shots, size, token = sys.argv[1], sys.argv[2], sys.argv[3], sys.argv[4]
    checks, screenshots = [], []

    def check(name, ok, detail):
        checks.append({"name": name, "ok": bool(ok), "detail": str(detail)})

    for dark in (False, True):
        driver = browser.start(size, dark=dark)
        mode = "dark" if dark else "light"
        try:
            # Not logged in: the login form, nothing else.
            driver.get(url)
            form = browser.wait(lambda: driver.find_element(By.CSS_SELECTOR, "input[name=password]"), 10)
            check(f"login-form-{mode}", form, "the login form is shown" if form else driver.page_source[:300])
            screenshots.append(browser.screenshot(driver, shots, f"login-{size}-{mode}"))
            check(f"axe-login-{mode}", not browser.accessibility(driver), browser.accessibility(driver) or "no serious or critical violation")
            form.send_keys(token)
            form.send_keys(Keys.ENTER)
            logout = browser.wait(lambda: driver.find_element(By.CSS_SELECTOR, "#logout button").is_displayed()
                                  and driver.find_element(By.CSS_SELECTOR, "#logout button"), 15)
            check(f"logged-in-{mode}", logout and driver.find_elements(By.CSS_SELECTOR, "#grid .camera"),
                  "the grid and a Log out button" if logout else "no Log out button after logging in")
            # Dark mode follows the system setting.
            background = driver.execute_script("return getComputedStyle(document.body).backgroundColor")
            channels = [int(c) for c in background[background.index("(") + 1:background.index(")")].split(",")[:3]]
            is_dark = sum(channels) / 3 < 80
            check(f"colours-{mode}", is_dark == dark, f"body background {background} with the system in {mode} mode")
            screenshots.append(browser.screenshot(driver, shots, f"grid-{size}-{mode}"))
            if not dark:
                # The keyboard reaches the header's links and Log out, in order, each visibly focused.
                driver.execute_script("document.activeElement && document.activeElement.blur(); window.scrollTo(0, 0)")
                reached = []
                for _ in range(6):
                    ActionChains(driver).send_keys(Keys.TAB).perform()
                    active = driver.switch_to.active_element
                    label = active.text or active.get_attribute("aria-label") or active.tag_name
                    outline = driver.execute_script("const s = getComputedStyle(arguments[0]); return s.outlineStyle !== 'none' && s.outlineWidth !== '0px'", active)
                    reached.append((label.strip(), outline))
                labels = [label for label, _ in reached]
                wanted = ["Vigil", "Cameras", "Review", "Side by side", "Log out"]
                check("keyboard-header", all(w in labels for w in wanted) and all(o for _, o in reached),
                      f"tab order {reached}")
                # Installable: Chromium's own reading of the manifest (DevTools protocol).
                manifest = driver.execute_cdp_cmd("Page.getAppManifest", {})
                errors = manifest.get("errors", [])
                check("manifest", manifest.get("url", "").endswith("/static/manifest.webmanifest") and not errors,
                      f"{manifest.get('url')}: errors {errors}")
                installability = driver.execute_cdp_cmd("Page.getInstallabilityErrors", {}).get("installabilityErrors", [])
                check("installable", not installability, installability or "Chromium finds no installability error")
                icons = driver.execute_script("""
                    return Promise.all(['/favicon.ico', '/static/icon.svg', '/static/icon-192.png', '/static/icon-512.png']
                      .map(u => fetch(u).then(r => [u, r.status, r.headers.get('content-type')])))""")
                check("icons", all(status == 200 for _, status, _ in icons), icons)
                sizes = driver.execute_script("""
                    return Promise.all(['/', '/static/style.css', ...[...document.scripts].map(s => s.src),
                      '/static/manifest.webmanifest', '/static/icon.svg', '/static/icon-192.png', '/static/icon-512.png']
                      .map(u => fetch(u).then(r => r.arrayBuffer()).then(b => b.byteLength)))""")
                check("page-size", sum(sizes) <= 150 * 1024, f"{sum(sizes)} bytes in {len(sizes)} files")
            check(f"no-outside-loads-{mode}", not browser.outside_loads(driver), browser.outside_loads(driver) or "none")
            # Log out: back to the login form, and the API refuses again.
            logout.click()
            # The server's login form (the page's own hidden one does not count).
            again = browser.wait(lambda: not driver.find_elements(By.ID, "grid")
                                 and driver.find_element(By.CSS_SELECTOR, "input[name=password]").is_displayed(), 10)
            status = driver.execute_script("return fetch('/api/v1/cameras').then(r => r.status)")
            check(f"logout-{mode}", again and status == 401, f"login form again: {bool(again)}; the API answers {status}")
            errors = browser.console_errors(driver)
            # The 401s of the logged-out page's own requests are expected; nothing else is.
            unexpected = [e for e in errors if "401" not in e]
            check(f"console-{mode}", not unexpected, unexpected or "no console error")
        finally:
            driver.quit()
    browser.report({"checks": checks, "screenshots": [s for s in screenshots if s]})


main()
