"""Another program's page on loopback, in headless Chromium: served from another port of
127.0.0.1 (as any local dev server, notebook or web app is), it tries what the issue found it
could do: mark an event reviewed (a no-cors POST), open camera porch's live WebSocket, load a
snapshot. Then Vigil's own page runs the very same script, which must succeed: the control that
shows the attack's checks could see it work.

Usage: ~/.cache/vigil/browser/bin/python attack_check.py URL SCREENSHOT_DIR SIZE FIRST_ID SECOND_ID
URL: Vigil's page (ServedPage). FIRST_ID: the event the foreign page tries to mark; SECOND_ID:
the one Vigil's own page marks. Prints one JSON object (browser.report).
"""
import functools
import http.server
import json
import os
import sys
import tempfile
import threading
import urllib.request

sys.path.insert(0, os.path.dirname(os.path.abspath(__file__)))
import browser  # noqa: E402

# What a page can make a browser do against Vigil (arguments: Vigil's URL, an event id).
ATTACK = """
const [vigil, eventId, done] = arguments;
(async () => {
  const seen = { post: "", opened: false, messages: 0, snapshot: "" };
  try {
    await fetch(`${vigil}/api/v1/events/${eventId}/reviewed`, { method: "POST", mode: "no-cors", body: '{"reviewed": true}' });
    seen.post = "sent";
  } catch (e) { seen.post = String(e); }
  const socket = new WebSocket(vigil.replace(/^http/, "ws") + "/api/v1/cameras/porch/live");
  socket.binaryType = "arraybuffer";
  socket.onopen = () => { seen.opened = true; };
  socket.onmessage = () => { seen.messages += 1; };
  await new Promise((resolve) => setTimeout(resolve, 3000));
  socket.close();
  seen.snapshot = await new Promise((resolve) => {
    const image = new Image();
    image.onload = () => resolve("loaded"); image.onerror = () => resolve("refused");
    image.src = `${vigil}/api/v1/cameras/porch/snapshot.jpg?t=${Date.now()}`;
  });
  done(seen);
})();
"""


def reviewed(url, event_id):
    """The event's reviewed flag as Vigil's API says (asked without any Origin, as curl asks)."""
    with urllib.request.urlopen(f"{url}/api/v1/events?limit=500", timeout=10) as answer:
        events = json.load(answer)["events"]
    return next((e["reviewed"] for e in events if e["id"] == event_id), None)


def serve_foreign_page():
    """A page on a free port of 127.0.0.1, in a thread: another program's server."""
    folder = tempfile.mkdtemp(prefix="vigil-attack-")
    with open(os.path.join(folder, "attack.html"), "w") as page:
        page.write("<!doctype html><title>Some local app</title><p>Nothing to see.</p>")
    handler = functools.partial(http.server.SimpleHTTPRequestHandler, directory=folder)
    handler.log_message = lambda *args: None
    server = http.server.ThreadingHTTPServer(("127.0.0.1", 0), handler)
    threading.Thread(target=server.serve_forever, daemon=True).start()
    return server, f"http://127.0.0.1:{server.server_address[1]}/attack.html"


def main():
    url, _, size, first, second = sys.argv[1], sys.argv[2], sys.argv[3], int(sys.argv[4]), int(sys.argv[5])
    checks = browser.Checks()
    server, foreign = serve_foreign_page()
    driver = browser.start(size)
    driver.set_script_timeout(30)
    try:
        driver.get(foreign)
        attack = driver.execute_async_script(ATTACK, url, first)
        mark = reviewed(url, first)
        checks.add("foreign-page-cannot-mark", mark is False, f"event {first} reviewed: {mark} after {foreign} posted ({attack['post']})")
        checks.add("foreign-page-no-live", not attack["opened"] and attack["messages"] == 0,
                   f"WebSocket opened: {attack['opened']}, {attack['messages']} message(s)")
        checks.add("foreign-page-no-snapshot", attack["snapshot"] == "refused", f"snapshot {attack['snapshot']}")
        driver.get(url)
        own = driver.execute_async_script(ATTACK, url, second)
        mark = reviewed(url, second)
        checks.add("own-page-marks", mark is True, f"event {second} reviewed: {mark}")
        checks.add("own-page-live", own["opened"] and own["messages"] > 0, f"WebSocket opened: {own['opened']}, {own['messages']} message(s)")
        checks.add("own-page-snapshot", own["snapshot"] == "loaded", f"snapshot {own['snapshot']}")
    finally:
        driver.quit()
        server.shutdown()
    browser.report(checks.seen)


if __name__ == "__main__":
    main()
