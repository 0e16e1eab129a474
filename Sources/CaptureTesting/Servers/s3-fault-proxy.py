#!/usr/bin/python3
"""An S3 fault-injecting HTTP proxy on loopback (standard library only), for Vigil's archive tests.

  s3-fault-proxy.py --upstream HOST:PORT [--port N] [--control-port N]
Forwards every request to the S3 server at HOST:PORT (moto) verbatim: method, path and query,
headers (Host and Authorization unchanged, since the SigV4 signature covers Host), body; and the
answer verbatim. HTTP/1.1 keep-alive on both sides. Prints "PORT <p> CONTROL <c>" once both listen.

The control port takes `POST /` with a JSON object; several keys may come at once, each is
checked before any is applied, and the answer is {"ok":true} (400 {"ok":false,"error":..} if not):
  {"mode":"pass"}                  clear every fault, being down included (applied first)
  {"fail":N,"status":500,"code":"InternalError","message":".."}
                                   answer the next N S3 requests with that status and an S3 XML
                                   error, without forwarding them (status 503 defaults to SlowDown)
  {"down":true}                    close the listener and every open client connection (connects
                                   are refused); {"down":false} binds the same port again
  {"delay":S}                      wait S seconds before answering each request (0 clears)
  {"rate":B}                       forward request bodies at most B bytes/s (0 clears)
  {"reset_after":B}                drop the connection (RST) after B body bytes of the next request
                                   whose body is longer than B (B = 0: the next request)
`GET /stats` answers a JSON list of {"method","op","part","status","count"}, sorted; status 0
means the client got no whole answer (a fault or the client dropped the connection).
`POST /stats/reset` clears the counts.
Requests under /moto-api/ are forwarded and counted but never faulted (the tests' set-up).
Each fault injected is logged as one line on stderr."""
import argparse, http.client, http.server, json, select, socket, socketserver, struct, sys, threading, time
import urllib.parse

p = argparse.ArgumentParser()
p.add_argument("--upstream", required=True, help="HOST:PORT of the S3 server")
p.add_argument("--port", type=int, default=0)
p.add_argument("--control-port", type=int, default=0)
a = p.parse_args()
upstream_host, _, upstream_port = a.upstream.rpartition(":")
upstream_port = int(upstream_port)

CHUNK = 64 * 1024
# Default messages as AWS words them, so a client's log reads as it would against AWS.
MESSAGES = {"InternalError": "We encountered an internal error. Please try again.",
            "SlowDown": "Please reduce your request rate.",
            "ServiceUnavailable": "Service is unable to handle request."}


def log(text):
    print(f"s3-fault-proxy: {text}", file=sys.stderr, flush=True)


class Faults:
    """The faults in force and the request counts; every field is read and written under `lock`."""

    def __init__(self):
        self.lock = threading.Lock()
        self.changed = threading.Condition(self.lock)  # wakes delayed requests when delay changes
        self.stats = {}
        self.clear()

    def clear(self):
        self.fail_left, self.fail_status, self.fail_code, self.fail_message = 0, 500, "InternalError", ""
        self.delay = 0.0
        self.rate = 0
        self.reset_after = None

    def count(self, method, op, part, status):
        with self.lock:
            key = (method, op, part, status)
            self.stats[key] = self.stats.get(key, 0) + 1

    def take_failure(self):
        """(status, code, message, left) for the next faked answer, or None."""
        with self.lock:
            if self.fail_left <= 0:
                return None
            self.fail_left -= 1
            return self.fail_status, self.fail_code, self.fail_message, self.fail_left

    def take_reset(self, body_length):
        """The byte count after which this request is dropped, or None. A request of unknown
        length (chunked) claims it too."""
        with self.lock:
            b = self.reset_after
            if b is None or not (b == 0 or body_length is None or body_length > b):
                return None
            self.reset_after = None
            return b

    def wait_delay(self):
        """Waits while `delay` says so; clearing or shortening it ends the wait early."""
        start = time.monotonic()
        with self.lock:
            if self.delay <= 0:
                return 0.0
            log(f"delay {self.delay:g} s")
            while True:
                left = start + self.delay - time.monotonic()
                if left <= 0:
                    return self.delay
                self.changed.wait(left)


faults = Faults()


def classify(method, target):
    """(op, part) of an S3 request in path-style addressing (/bucket or /bucket/key)."""
    path, _, query = target.partition("?")
    q = urllib.parse.parse_qs(query, keep_blank_values=True)
    has_key = path.lstrip("/").partition("/")[2] != ""
    part = q.get("partNumber", [None])[0]
    part = int(part) if part is not None and part.isdigit() else None
    if method == "PUT" and has_key:
        return ("upload_part" if "uploadId" in q and part is not None else "put_object"), part
    if method == "POST" and has_key and "uploads" in q:
        return "create_multipart", part
    if method == "POST" and has_key and "uploadId" in q:
        return "complete_multipart", part
    if method == "DELETE" and has_key:
        return ("abort_multipart" if "uploadId" in q else "delete_object"), part
    if method == "GET" and has_key:
        return ("list_parts" if "uploadId" in q else "get_object"), part
    if method == "HEAD" and has_key:
        return "head_object", part
    if method == "GET" and "uploads" in q:
        return "list_uploads", part
    listing = {"list-type", "prefix", "delimiter", "marker", "max-keys", "encoding-type",
               "continuation-token", "start-after", "fetch-owner"}
    if method == "GET" and path not in ("", "/") and ("list-type" in q or set(q) <= listing):
        return "list_objects", part
    return "other", part


class Dropped(Exception):
    """The connection to the client is to be ended at once (reset_after, or the client left)."""


class ProxyHandler(http.server.BaseHTTPRequestHandler):
    protocol_version = "HTTP/1.1"  # keep-alive: Vigil's client pools connections
    upstream = None

    def log_message(self, *args):
        pass

    def handle(self):
        try:
            super().handle()
        except (OSError, Dropped, http.client.HTTPException, ValueError):
            self.close_connection = True  # a client that hangs up or is dropped ends only its thread
        finally:
            if self.upstream is not None:
                self.upstream.close()

    def handle_one_request(self):
        # As BaseHTTPRequestHandler's, but every method is forwarded the same way (no do_<METHOD>).
        try:
            self.raw_requestline = self.rfile.readline(65537)
        except OSError:
            self.close_connection = True
            return
        if not self.raw_requestline:
            self.close_connection = True
            return
        if len(self.raw_requestline) > 65536:
            self.send_error(414)
            return
        if not self.parse_request():
            return
        self.proxy()

    # -- the request body --------------------------------------------------------------------

    def body_length(self):
        """Content-Length, or None for a chunked body; 0 without either."""
        if "chunked" in self.headers.get("Transfer-Encoding", "").lower():
            return None
        length = self.headers.get("Content-Length")
        if length is None:
            return 0
        if not length.strip().isdigit():
            raise Dropped("bad Content-Length")
        return int(length)

    def body_pieces(self, length):
        """The request body as it came (chunk framing included), in pieces of (raw, data size)."""
        if length is not None:
            yield from self.exact_pieces(length)
            return
        while True:
            line = self.rfile.readline(1024)
            if not line.endswith(b"\n"):
                raise Dropped("bad chunk")
            size = int(line.split(b";")[0].strip() or b"x", 16)
            if size == 0:
                raw = line
                while True:  # trailers, up to the empty line
                    trailer = self.rfile.readline(65537)
                    if not trailer:
                        raise Dropped("client left mid-body")
                    raw += trailer
                    if trailer in (b"\r\n", b"\n"):
                        break
                yield raw, 0
                return
            yield line, 0
            yield from self.exact_pieces(size)
            yield self.rfile.readline(3), 0

    def exact_pieces(self, length):
        left = length
        while left > 0:
            piece = self.rfile.read(min(CHUNK, left))
            if not piece:
                raise Dropped("client left mid-body")
            left -= len(piece)
            yield piece, len(piece)

    def throttled_pieces(self, pieces, label):
        """Body pieces at most `rate` bytes/s (re-read each piece, so a change applies mid-body)."""
        sent, start, logged = 0, time.monotonic(), False
        for raw, size in pieces:
            with faults.lock:
                rate = faults.rate
            if rate > 0 and size > 0:
                if not logged:
                    log(f"rate {rate} B/s {label}")
                    logged = True
                # Pieces no larger than a tenth of a second's worth keep the rate smooth.
                step = max(1, min(CHUNK, rate // 10))
                for i in range(0, len(raw), step):
                    yield raw[i:i + step], min(step, len(raw) - i)
                    sent += min(step, len(raw) - i)
                    wait = start + sent / rate - time.monotonic()
                    if wait > 0:
                        time.sleep(wait)
                continue
            if rate == 0:
                start, sent = time.monotonic(), 0  # unthrottled bytes earn no credit for later
            yield raw, size

    # -- answering -----------------------------------------------------------------------------

    def write_head(self, status, reason, headers):
        lines = [f"HTTP/1.1 {status} {reason}\r\n"]
        lines += [f"{name}: {value}\r\n" for name, value in headers]
        if self.close_connection:
            lines.append("Connection: close\r\n")
        self.wfile.write(("".join(lines) + "\r\n").encode("latin-1"))

    def answer_error(self, status, code, message):
        """An S3-style XML error (HEAD gets the status only, as S3 sends it)."""
        body = (f'<?xml version="1.0" encoding="UTF-8"?>\n<Error><Code>{code}</Code>'
                f"<Message>{message}</Message><RequestId>s3-fault-proxy</RequestId></Error>").encode()
        headers = [("Content-Type", "application/xml"), ("Content-Length", str(len(body))),
                   ("x-amz-request-id", "s3-fault-proxy")]
        try:
            reason = http.HTTPStatus(status).phrase
        except ValueError:
            reason = "Error"
        self.write_head(status, reason, headers)
        if self.command != "HEAD":
            self.wfile.write(body)

    def drop(self):
        """Ends the client connection with a reset, as a network fault would."""
        self.connection.setsockopt(socket.SOL_SOCKET, socket.SO_LINGER, struct.pack("ii", 1, 0))
        self.server.aborted.add(self.connection)
        raise Dropped("reset")

    def upstream_connection(self):
        """The upstream connection for this client connection; a new one if moto closed it."""
        conn = self.upstream
        if conn is not None and conn.sock is not None:
            readable, _, _ = select.select([conn.sock], [], [], 0)
            if readable:  # an idle connection that reads as ready has been closed by the peer
                conn.close()
        if conn is None:
            conn = self.upstream = http.client.HTTPConnection(upstream_host, upstream_port, timeout=300)
        return conn

    def proxy(self):
        method, target = self.command, self.path
        op, part = classify(method, target)
        label = f"{method} {target}"
        length = self.body_length()
        setup = target.startswith("/moto-api/")
        status = 0
        try:
            if not setup:
                faults.wait_delay()
                if listener.server is not self.server:
                    self.drop()  # went down while this request waited: moto must not see it
                failure = faults.take_failure()
                if failure is not None:
                    status, code, message, left = failure
                    for _ in self.body_pieces(length):
                        pass  # read to the end so the connection stays usable
                    log(f"fail {status} {code} {label} ({left} left)")
                    self.answer_error(status, code, message or MESSAGES.get(code, code))
                    return
            reset = None if setup else faults.take_reset(length)
            status = self.forward(method, target, length, reset, label)
        finally:
            faults.count(method, op, part, status)

    def forward(self, method, target, length, reset, label):
        """Sends the request upstream and its answer back; returns the status the client got."""
        conn = self.upstream_connection()
        try:
            conn.putrequest(method, target, skip_host=True, skip_accept_encoding=True)
            for name, value in self.headers.items():
                conn.putheader(name, value)
            conn.endheaders()
        except (OSError, http.client.HTTPException) as error:
            conn.close()
            log(f"upstream unreachable for {label}: {error}")
            for _ in self.body_pieces(length):
                pass
            self.answer_error(502, "BadGateway", f"upstream: {error}")
            return 502
        forwarded = 0
        if reset == 0:
            log(f"reset after 0 body bytes {label}")
            conn.close()
            self.drop()
        for raw, size in self.throttled_pieces(self.body_pieces(length), label):
            if reset is not None and forwarded + size > reset:
                conn.send(raw[:reset - forwarded])
                log(f"reset after {reset} body bytes {label}")
                conn.close()  # moto sees the same cut
                self.drop()
            conn.send(raw)
            forwarded += size
        try:
            response = conn.getresponse()
        except (OSError, http.client.HTTPException) as error:
            conn.close()
            log(f"upstream failed for {label}: {error}")
            self.answer_error(502, "BadGateway", f"upstream: {error}")
            return 502
        self.relay(method, response)
        if response.will_close:
            conn.close()
        return response.status

    def relay(self, method, response):
        """Sends moto's answer back: its headers as they came, its body by its own framing."""
        hop = {"connection", "keep-alive"}
        headers = [(n, v) for n, v in response.getheaders() if n.lower() not in hop]
        chunked = response.chunked
        no_body = method == "HEAD" or response.status in (204, 304) or 100 <= response.status < 200
        if not no_body and not chunked and response.length is None:
            self.close_connection = True  # a body that ends when moto closes ends ours the same way
        self.write_head(response.status, response.reason, headers)
        if no_body:
            response.read()
            return
        while True:
            if chunked or response.length is None:
                piece = response.read1(CHUNK)
            else:
                piece = response.read(min(CHUNK, response.length))
            if not piece:
                break
            self.wfile.write(b"%x\r\n%s\r\n" % (len(piece), piece) if chunked else piece)
        if chunked:
            self.wfile.write(b"0\r\n\r\n")


class LoopbackServer(http.server.ThreadingHTTPServer):
    daemon_threads = True

    def server_bind(self):
        # HTTPServer.server_bind looks the host name up (getfqdn): slow for nothing on loopback.
        socketserver.TCPServer.server_bind(self)
        self.server_name, self.server_port = self.server_address[:2]


class ProxyServer(LoopbackServer):
    """Tracks its open client connections so that going down can close them all."""
    block_on_close = False
    allow_reuse_address = True  # {"down":false} binds the same port again

    def __init__(self, address):
        self.clients = set()
        self.aborted = set()
        self.clients_lock = threading.Lock()
        super().__init__(address, ProxyHandler)

    def process_request(self, request, client_address):
        with self.clients_lock:
            self.clients.add(request)
        super().process_request(request, client_address)

    def shutdown_request(self, request):
        with self.clients_lock:
            self.clients.discard(request)
        if request in self.aborted:
            self.aborted.discard(request)
            request.close()  # no FIN first: the linger of 0 makes the close a reset
            return
        super().shutdown_request(request)

    def handle_error(self, request, client_address):
        pass  # clients that hang up are expected here

    def close_clients(self):
        with self.clients_lock:
            clients = list(self.clients)
        for request in clients:
            try:
                request.setsockopt(socket.SOL_SOCKET, socket.SO_LINGER, struct.pack("ii", 1, 0))
                request.shutdown(socket.SHUT_RDWR)  # wakes the thread blocked reading it
            except OSError:
                pass


class Listener:
    """The proxy's listening side, which can go down and come back on the same port."""

    def __init__(self, port):
        self.lock = threading.Lock()
        self.server = None
        self.port = port
        self.up()

    def up(self):
        with self.lock:
            if self.server is not None:
                return
            self.server = ProxyServer(("127.0.0.1", self.port))
            self.port = self.server.server_address[1]
            threading.Thread(target=self.server.serve_forever, args=(0.05,), daemon=True).start()

    def down(self):
        with self.lock:
            server, self.server = self.server, None
        if server is None:
            return
        server.shutdown()
        server.server_close()
        server.close_clients()
        log(f"down: port {self.port} closed")


listener = Listener(a.port)


class ControlHandler(http.server.BaseHTTPRequestHandler):
    def log_message(self, *args):
        pass

    def reply(self, status, value):
        body = json.dumps(value).encode()
        self.send_response(status)
        self.send_header("Content-Type", "application/json")
        self.send_header("Content-Length", str(len(body)))
        self.end_headers()
        self.wfile.write(body)

    def do_GET(self):
        if self.path != "/stats":
            return self.reply(404, {"ok": False, "error": "GET /stats only"})
        with faults.lock:
            rows = [{"method": m, "op": o, "part": p, "status": s, "count": c}
                    for (m, o, p, s), c in faults.stats.items()]
        rows.sort(key=lambda r: (r["op"], r["method"], r["part"] or 0, r["status"]))
        self.reply(200, rows)

    def do_POST(self):
        body = self.rfile.read(int(self.headers.get("Content-Length") or 0))
        if self.path == "/stats/reset":
            with faults.lock:
                faults.stats.clear()
            return self.reply(200, {"ok": True})
        if self.path != "/":
            return self.reply(404, {"ok": False, "error": "POST / or /stats/reset"})
        try:
            command = json.loads(body or b"{}")
            self.apply(command)
        except (ValueError, TypeError, KeyError) as error:
            return self.reply(400, {"ok": False, "error": str(error)})
        self.reply(200, {"ok": True})

    @staticmethod
    def number(command, key, minimum=0):
        value = command[key]
        if isinstance(value, bool) or not isinstance(value, (int, float)) or value < minimum:
            raise ValueError(f"{key} must be a number >= {minimum}")
        return value

    def apply(self, command):
        if not isinstance(command, dict):
            raise ValueError("a JSON object is expected")
        known = {"mode", "fail", "status", "code", "message", "down", "delay", "rate", "reset_after"}
        unknown = set(command) - known
        if unknown:
            raise ValueError(f"unknown keys: {sorted(unknown)}")
        # Check everything before changing anything, so a bad command changes nothing.
        if "mode" in command and command["mode"] != "pass":
            raise ValueError('mode must be "pass"')
        if ("status" in command or "code" in command or "message" in command) and "fail" not in command:
            raise ValueError("status, code and message go with fail")
        fail = int(self.number(command, "fail")) if "fail" in command else None
        status = int(self.number(command, "status", 100)) if "status" in command else 500
        if not 100 <= status <= 599:
            raise ValueError("status must be 100...599")
        code = str(command.get("code") or ("SlowDown" if status == 503 else "InternalError"))
        message = str(command.get("message", ""))
        if "down" in command and not isinstance(command["down"], bool):
            raise ValueError("down must be true or false")
        delay = float(self.number(command, "delay")) if "delay" in command else None
        rate = int(self.number(command, "rate")) if "rate" in command else None
        reset_after = int(self.number(command, "reset_after")) if "reset_after" in command else None
        with faults.lock:
            if "mode" in command:
                faults.clear()
            if fail is not None:
                faults.fail_left, faults.fail_status, faults.fail_code, faults.fail_message = fail, status, code, message
            if delay is not None:
                faults.delay = delay
            if rate is not None:
                faults.rate = rate
            if reset_after is not None:
                faults.reset_after = reset_after
            faults.changed.notify_all()
        if command.get("down") is True:
            listener.down()
        elif command.get("down") is False or "mode" in command:
            listener.up()  # "pass" clears every fault, being down included


control = LoopbackServer(("127.0.0.1", a.control_port), ControlHandler)
print(f"PORT {listener.port} CONTROL {control.server_address[1]}", flush=True)
try:
    control.serve_forever()
except KeyboardInterrupt:
    pass
