#!/usr/bin/python3
"""An HTTP multipart MJPEG camera on loopback (standard library only), for Vigil's tests.

  mjpeg-server.py JPEG... [--port N] [--fps N] [--cut-after N] [--log FILE]
Serves the given JPEG files in turn at http://127.0.0.1:PORT/video.mjpg as
multipart/x-mixed-replace; prints "PORT <n>" once it listens. --cut-after N closes each
connection in the middle of frame N (half its bytes sent). --log FILE appends a line
"INDEX UNIX-SECONDS" as each frame is sent (INDEX: which of the JPEGs), for tests that
compare Vigil's times with the scene's."""
import argparse, http.server, socketserver, sys, time

p = argparse.ArgumentParser()
p.add_argument("jpegs", nargs="+")
p.add_argument("--port", type=int, default=0)
p.add_argument("--fps", type=float, default=15)
p.add_argument("--cut-after", type=int, default=0)
p.add_argument("--log")
a = p.parse_args()
frames = [open(f, "rb").read() for f in a.jpegs]

class Handler(http.server.BaseHTTPRequestHandler):
    def do_GET(self):
        if self.path != "/video.mjpg":
            self.send_error(404)
            return
        self.send_response(200)
        self.send_header("Content-Type", "multipart/x-mixed-replace;boundary=vigilframe")
        self.end_headers()
        n = 0
        start = time.monotonic()
        try:
            while True:
                jpeg = frames[n % len(frames)]
                head = (f"--vigilframe\r\nContent-Type: image/jpeg\r\nContent-Length: {len(jpeg)}\r\n\r\n").encode()
                if a.cut_after and n == a.cut_after:
                    self.wfile.write(head + jpeg[: len(jpeg) // 2])
                    self.wfile.flush()
                    return
                self.wfile.write(head + jpeg + b"\r\n")
                self.wfile.flush()
                if a.log:
                    with open(a.log, "a") as log:
                        log.write(f"{n % len(frames)} {time.time():.6f}\n")
                n += 1
                time.sleep(max(0, start + n / a.fps - time.monotonic()))
        except (BrokenPipeError, ConnectionResetError):
            pass

    def log_message(self, *args):
        pass

class Server(socketserver.ThreadingMixIn, http.server.HTTPServer):
    daemon_threads = True
    allow_reuse_address = True

server = Server(("127.0.0.1", a.port), Handler)
print(f"PORT {server.server_address[1]}", flush=True)
server.serve_forever()
