#!/usr/bin/python3
"""A hostile RTSP camera on loopback: every session misbehaves in one named, seeded way.

Standard library only (plain sockets; RTP packetized here), run with Debian's /usr/bin/python3.
ffmpeg encodes the canned H.264 once at start (testsrc, 160x90, 15 fps, a keyframe each second).
Prints "PORT <n>" once it listens.

  hostile-rtsp-server.py [--port N] [--log FILE] [--runaway-mib N] [--hold-seconds S] [--skip A,B]
  hostile-rtsp-server.py --table     the behaviours, one JSON object a line

Paths (any user and password are accepted: the server never checks them):
  /hostile/SEED     session k of this path follows schedule(SEED, k): each round of
                    len(BEHAVIOURS) sessions plays every behaviour once, in an order shuffled by
                    SEED and the round; the variant is drawn from SEED and k
  /behaviour/NAME   every session follows NAME (to reproduce one); /behaviour/good streams on
                    until the client leaves, where a scheduled good session ends after 3 s
  /dialect/NAME     a camera that behaves, in one of the forms real cameras answer in (DIALECTS:
                    fmtp orders, control URLs, Content-Base forms, Session and SSRC spellings,
                    audio and ONVIF tracks, Digest without qop, H.265 as Dahua sends it); it
                    streams until the client leaves. `--dialects` prints them.
Each session ends with one JSON line in FILE: path, seed, session, behaviour, variant, fails,
expect, start and end (Unix seconds), sent (bytes) and outcome.

BEHAVIOURS below is the one table of what each misbehaviour is and what Vigil's log should say
about it: `expect` is a loose regular expression (case-insensitive) that some line of Vigil's
log about that camera must match while the session lasts; `fails` says where a careful client
gives up: "connect" (it cannot start recording: `vigil devices --url` must say why), "stream"
(after it started, or it may go on with a warning) or "never" (a camera that behaves). The
server's own words (reason phrases, realms, header names) never contain what `expect` looks
for, so only Vigil's own words can match.
"""
import argparse, base64, hashlib, json, os, random, select, socket, struct, subprocess, sys, threading, time

FPS = 15
TICKS = 90000 // FPS
MTU = 1400
PT = 96

# ---------------------------------------------------------------- the canned H.264 stream

def annexb_units(data):
    """The NAL units of an Annex B byte stream."""
    units, i = [], data.find(b"\x00\x00\x01")
    while i >= 0:
        start = i + 3
        j = data.find(b"\x00\x00\x01", start)
        end = len(data) if j < 0 else j
        unit = data[start:end]
        if j >= 0 and unit.endswith(b"\x00"):
            unit = unit[:-1]  # the 4-byte start code's leading zero
        units.append(unit)
        i = j
    return units


def canned_stream():
    """(sps, pps, access units): each unit a (NAL units, is keyframe) pair, two seconds of them."""
    h264 = subprocess.run(
        ["ffmpeg", "-hide_banner", "-loglevel", "error", "-f", "lavfi", "-i", f"testsrc=size=160x90:rate={FPS}",
         "-frames:v", str(2 * FPS), "-c:v", "libx264", "-preset", "ultrafast", "-tune", "zerolatency",
         "-threads", "1", "-g", str(FPS), "-bsf:v", "h264_mp4toannexb", "-f", "h264", "-"],
        capture_output=True, check=True).stdout
    sps = pps = None
    units, current = [], []
    for nal in annexb_units(h264):
        kind = nal[0] & 0x1F
        if kind == 6:
            continue  # x264's own SEI: cameras send none
        if kind == 7 and sps is None:
            sps = nal
        if kind == 8 and pps is None:
            pps = nal
        # A new picture: parameter sets, or a slice whose first_mb_in_slice is 0, after a slice.
        starts = kind in (7, 8, 9) or (kind in (1, 5) and nal[1] & 0x80)
        if starts and any(n[0] & 0x1F in (1, 5) for n in current):
            units.append((current, any(n[0] & 0x1F == 5 for n in current)))
            current = []
        current.append(nal)
    units.append((current, any(n[0] & 0x1F == 5 for n in current)))
    return sps, pps, units


class Bits:
    """An H.264 RBSP written bit by bit (u(n) and ue(v), RFC 6184's exp-Golomb)."""
    def __init__(self):
        self.bits = []

    def u(self, n, value):
        self.bits += [(value >> (n - 1 - i)) & 1 for i in range(n)]

    def ue(self, value):
        value += 1
        self.u(value.bit_length() - 1, 0)
        self.u(value.bit_length(), value)

    def rbsp(self):
        bits = self.bits + [1]
        bits += [0] * (-len(bits) % 8)
        raw = bytes(int("".join(map(str, bits[i:i + 8])), 2) for i in range(0, len(bits), 8))
        out, zeros = bytearray(), 0
        for b in raw:  # emulation prevention
            if zeros >= 2 and b <= 3:
                out.append(3)
                zeros = 0
            out.append(b)
            zeros = zeros + 1 if b == 0 else 0
        return bytes(out)


def make_sps(width_mbs=10, height_mbs=6, sps_id=0, log2_frame_minus4=0, profile=66, chroma=None):
    """A baseline (or, with `chroma`, high-profile) SPS with the given fields, nothing checked."""
    b = Bits()
    b.u(8, profile)
    b.u(8, 0)
    b.u(8, 30)
    b.ue(sps_id)
    if chroma is not None:
        b.ue(chroma)
        b.ue(0)
        b.ue(0)
        b.u(1, 0)
        b.u(1, 0)
    b.ue(log2_frame_minus4)
    b.ue(2)  # pic_order_cnt_type
    b.ue(1)  # max_num_ref_frames
    b.u(1, 0)
    b.ue(width_mbs - 1)
    b.ue(height_mbs - 1)
    b.u(1, 1)  # frame_mbs_only
    b.u(1, 1)
    b.u(1, 0)  # no cropping
    b.u(1, 0)  # no VUI
    return bytes([0x67]) + b.rbsp()

# ---------------------------------------------------------------- RTP

def fragments(nal, mtu=MTU):
    """RTP payloads for one NAL unit: itself, or FU-A fragments (RFC 6184 5.8)."""
    if len(nal) <= mtu:
        return [nal]
    indicator, kind, body = (nal[0] & 0xE0) | 28, nal[0] & 0x1F, nal[1:]
    step = mtu - 2
    return [bytes([indicator, (0x80 if i == 0 else 0) | (0x40 if i + step >= len(body) else 0) | kind]) + body[i:i + step]
            for i in range(0, len(body), step)]


def stap_a(nals):
    return bytes([max(n[0] & 0x60 for n in nals) | 24]) + b"".join(struct.pack(">H", len(n)) + n for n in nals)


def payloads(nals, mtu=MTU):
    """What a camera sends for one picture: parameter sets in one STAP-A, big slices as FU-A."""
    sets = [n for n in nals if n[0] & 0x1F in (7, 8)]
    out = [stap_a(sets)] if sets else []
    for n in nals:
        if n[0] & 0x1F not in (7, 8):
            out += fragments(n, mtu)
    return out


def canned_hevc(in_band):
    """(vps, sps, pps, access units) of two seconds of H.265 (x265); with `in_band` false the
    units carry no parameter sets (they are only in the SDP, as Dahua sends them)."""
    hevc = subprocess.run(
        ["ffmpeg", "-hide_banner", "-loglevel", "error", "-f", "lavfi", "-i", f"testsrc=size=160x90:rate={FPS}",
         "-frames:v", str(2 * FPS), "-c:v", "libx265", "-preset", "ultrafast", "-tune", "zerolatency",
         "-x265-params", f"log-level=error:keyint={FPS}:repeat-headers=1", "-f", "hevc", "-"],
        capture_output=True, check=True).stdout
    sets, units, current = {}, [], []
    for nal in annexb_units(hevc):
        kind = (nal[0] >> 1) & 0x3F
        if kind in (32, 33, 34):
            sets.setdefault(kind, nal)
        if kind >= 35:
            continue  # access unit delimiters, SEI: cameras send none
        starts = kind in (32, 33, 34) or (kind < 32 and nal[2] & 0x80)
        if starts and any((n[0] >> 1) & 0x3F < 32 for n in current):
            units.append((current, any(16 <= (n[0] >> 1) & 0x3F <= 21 for n in current)))
            current = []
        if in_band or kind not in (32, 33, 34):
            current.append(nal)
    units.append((current, any(16 <= (n[0] >> 1) & 0x3F <= 21 for n in current)))
    return sets[32], sets[33], sets[34], units


def hevc_payloads(nals, mtu=MTU):
    """RFC 7798: small units as they are, big ones as fragmentation units (type 49)."""
    out = []
    for nal in nals:
        if len(nal) <= mtu:
            out.append(nal)
            continue
        kind, body, step = (nal[0] >> 1) & 0x3F, nal[2:], mtu - 3
        head = bytes([(nal[0] & 0x81) | (49 << 1), nal[1]])
        out += [head + bytes([(0x80 if i == 0 else 0) | (0x40 if i + step >= len(body) else 0) | kind]) + body[i:i + step]
                for i in range(0, len(body), step)]
    return out


def rtp(payload, seq, ts, marker, first_byte=0x80, pt=PT):
    return struct.pack(">BBHII", first_byte, (0x80 if marker else 0) | pt, seq & 0xFFFF, ts & 0xFFFFFFFF, 0x5EED0001) + payload


def interleaved(packet, channel=0):
    return struct.pack(">BBH", 0x24, channel, len(packet)) + packet

# ---------------------------------------------------------------- sessions

class Gone(Exception):
    """The session is over: the client left or stopped answering, or the server ended it."""


class Request:
    def __init__(self, method, url, headers):
        self.method, self.url, self.headers = method, url, headers
        self.cseq = headers.get("cseq")


class Session:
    """One client connection. Behaviours drive it through these steps."""

    def __init__(self, server, conn):
        self.server, self.conn = server, conn
        self.buf = b""
        self.sent = 0
        self.variant = ""
        self.rng = random.Random()
        self.seq = 0
        self.ts = 0
        self.last_ts = 0
        self.picture = 0
        self.units = server.units
        self.channel = 0
        self.session_id = "%08X" % random.getrandbits(32)
        self.base = ""
        self.scheduled = False
        conn.settimeout(server.hold)

    # -- choosing
    def pick(self, *choices):
        """One of `choices` (label, value) pairs or labels, chosen by the seed; named in the log."""
        choice = self.rng.choice(choices)
        label, value = choice if isinstance(choice, tuple) else (choice, choice)
        self.variant = (self.variant + "; " if self.variant else "") + str(label)
        return value

    # -- bytes on the wire
    def send(self, data):
        try:
            self.conn.sendall(data)
        except socket.timeout:
            raise Gone("the client stopped reading")
        except OSError as e:
            raise Gone(f"the client left ({e.strerror or e})")
        self.sent += len(data)

    def receive(self, timeout):
        ready, _, _ = select.select([self.conn], [], [], timeout)
        if not ready:
            return False
        try:
            data = self.conn.recv(65536)
        except OSError as e:
            raise Gone(f"the client left ({e.strerror or e})")
        if not data:
            raise Gone("the client closed the connection")
        self.buf += data
        return True

    def take_request(self):
        """A whole request from the buffer (interleaved RTCP from the client is skipped), or None."""
        while self.buf.startswith(b"$"):
            if len(self.buf) < 4:
                return None
            length = 4 + struct.unpack(">H", self.buf[2:4])[0]
            if len(self.buf) < length:
                return None
            self.buf = self.buf[length:]
        end = self.buf.find(b"\r\n\r\n")
        if end < 0:
            if len(self.buf) > 65536:
                raise Gone("the client's request has no end")
            return None
        head, self.buf = self.buf[:end].decode("latin-1"), self.buf[end + 4:]
        lines = head.split("\r\n")
        parts = lines[0].split(" ")
        headers = {}
        for line in lines[1:]:
            name, _, value = line.partition(":")
            headers[name.strip().lower()] = value.strip()
        return Request(parts[0], parts[1] if len(parts) > 1 else "", headers)

    def next_request(self, timeout=None):
        deadline = time.monotonic() + (self.server.hold if timeout is None else timeout)
        while True:
            request = self.take_request()
            if request:
                return request
            left = deadline - time.monotonic()
            if left <= 0:
                raise Gone("the client sent no request")
            self.receive(left)

    def hold(self, seconds=None):
        """Says nothing until the client leaves (or `seconds`, at most the hold time), answering
        nothing either."""
        end = time.monotonic() + min(seconds or self.server.hold, self.server.hold)
        while time.monotonic() < end:
            self.receive(end - time.monotonic())
            if len(self.buf) > 1 << 20:
                self.buf = b""
        if seconds is None:
            raise Gone("held silent for the hold time")

    def end(self, reset=False):
        if reset:
            self.conn.setsockopt(socket.SOL_SOCKET, socket.SO_LINGER, struct.pack("ii", 1, 0))
        raise Gone("the server reset the connection" if reset else "the server closed the connection")

    # -- RTSP answers
    def answer(self, request, status=200, reason="OK", headers=(), body=b"", cseq=True):
        lines = [f"RTSP/1.0 {status} {reason}"]
        if cseq and request.cseq is not None:
            lines.append(f"CSeq: {request.cseq}")
        lines += list(headers)
        if body:
            lines.append(f"Content-Length: {len(body)}")
        return ("\r\n".join(lines) + "\r\n\r\n").encode("latin-1") + body

    def sdp(self, framerate="15", sprop=None, video=None):
        sps, pps = self.server.sps, self.server.pps
        sprop = sprop if sprop is not None else b64(sps) + "," + b64(pps)
        lines = ["v=0", "o=- 1 1 IN IP4 127.0.0.1", "s=Hostile", "c=IN IP4 127.0.0.1", "t=0 0", "a=control:*"]
        lines += video if video is not None else [
            f"m=video 0 RTP/AVP {PT}", f"a=rtpmap:{PT} H264/90000",
            f"a=fmtp:{PT} packetization-mode=1;profile-level-id={sps[1:4].hex()};sprop-parameter-sets={sprop}",
            f"a=framerate:{framerate}", "a=control:trackID=0"]
        return ("\r\n".join(lines) + "\r\n").encode("latin-1")

    def default_answer(self, request):
        m = request.method
        if m == "OPTIONS":
            return self.answer(request, headers=["Public: OPTIONS, DESCRIBE, SETUP, PLAY, GET_PARAMETER, TEARDOWN"])
        if m == "DESCRIBE":
            return self.described(request, self.sdp())
        if m == "SETUP":
            return self.answer(request, headers=[f"Transport: RTP/AVP/TCP;unicast;interleaved={self.channel}-{self.channel + 1}",
                                                 f"Session: {self.session_id};timeout=60"])
        if m == "PLAY":
            return self.answer(request, headers=[f"Session: {self.session_id}", "Range: npt=0.000-"])
        if m == "TEARDOWN":
            self.send(self.answer(request))
            raise Gone("the client tore the session down")
        return self.answer(request, headers=[f"Session: {self.session_id}"])

    def described(self, request, body):
        """DESCRIBE's answer with `body` as its SDP."""
        return self.answer(request, headers=["Content-Type: application/sdp", f"Content-Base: {self.base}/"], body=body)

    def play_after(self, method, answer, **play):
        """The handshake with `method` answered by `answer(request)`, then video (`play`'s
        arguments) and a close."""
        self.serve_until(method, answer)
        self.serve_until("PLAY")
        self.play(**play)
        self.end()

    def serve_until(self, method, answer=None):
        """Answers requests as a camera does until `method` (answered by `answer`, a function of
        the request returning bytes, when given); returns that request."""
        while True:
            request = self.next_request()
            if request.method == method and answer is not None:
                self.send(answer(request))
                return request
            self.send(self.default_answer(request))
            if request.method == method:
                return request

    # -- pictures
    def packets(self, nals, ts, split=None):
        """The interleaved RTP packets of one picture (marker on its last); `split(nals)` may
        packetize the units otherwise than `payloads` does."""
        parts = split(nals) if split else payloads(nals)
        out = []
        for i, p in enumerate(parts):
            out.append(interleaved(rtp(p, self.seq, ts, i == len(parts) - 1), self.channel))
            self.seq = (self.seq + 1) & 0xFFFF
        return out

    def next_unit(self, keyframes=True):
        while True:
            nals, key = self.units[self.picture % len(self.units)]
            self.picture += 1
            if keyframes or not key:
                return nals, key

    def answer_requests(self):
        """Answers what the client asked meanwhile (keep-alives), without waiting."""
        while self.receive(0):
            pass
        while True:
            request = self.take_request()
            if not request:
                return
            self.send(self.default_answer(request))

    def play(self, count=None, seconds=None, step=None, split=None, mangle=None, paced=True, keyframes=True):
        """Sends pictures of the canned stream (from a keyframe), `count` of them or for
        `seconds`: timestamps advance by `step(ts)` (one frame by default); `split` packetizes
        each picture's units (see `packets`), `mangle(packets)` may change its interleaved
        packets. Answers requests on the way."""
        if keyframes and self.picture % len(self.units) != 0:
            self.picture += len(self.units) - self.picture % len(self.units)
        start = time.monotonic()
        n = 0
        while (count is None or n < count) and (seconds is None or time.monotonic() - start < seconds):
            nals, _ = self.next_unit(keyframes)
            packets = self.packets(nals, self.ts, split)
            self.send(b"".join(mangle(packets) if mangle else packets))
            self.last_ts = self.ts
            self.ts = (step(self.ts) if step else self.ts + TICKS) & 0xFFFFFFFF
            n += 1
            if paced:
                wait = start + n / FPS - time.monotonic()
                if wait > 0:
                    self.receive(wait)
                self.answer_requests()

    def start_streaming(self):
        """The whole handshake as a camera does it, then one second of good video."""
        self.serve_until("PLAY")
        self.play(seconds=1)


def b64(data):
    return base64.b64encode(data).decode()

# ---------------------------------------------------------------- the behaviours

BEHAVIOURS = {}


def behaviour(name, fails, expect, what):
    def register(run):
        BEHAVIOURS[name] = {"name": name, "fails": fails, "expect": expect, "what": what, "run": run}
        return run
    return register


def step_answer(s, make):
    """Answers the OPTIONS, DESCRIBE or SETUP (chosen) with `make(request, default answer)`."""
    method = s.pick("OPTIONS", "DESCRIBE", "SETUP")
    s.serve_until(method, lambda r: make(r, s.default_answer(r)))


def replace_head(answer, old, new):
    head, sep, body = answer.partition(b"\r\n\r\n")
    return head.replace(old, new) + sep + body


@behaviour("content-length-int64-max", "connect", r"Content-Length",
           "an answer (OPTIONS, DESCRIBE, SETUP, or a message between packets) with Content-Length: 9223372036854775807")
def content_length_int64_max(s):
    where = s.pick("OPTIONS", "DESCRIBE", "SETUP", "between packets")
    bad = "Content-Length: 9223372036854775807"
    if where == "between packets":
        s.start_streaming()
        s.send(f"RTSP/1.0 200 OK\r\nCSeq: 99\r\n{bad}\r\n\r\n".encode())
        s.play(seconds=2)
        s.end()
    s.serve_until(where, lambda r: s.answer(r, headers=[bad]))
    s.hold()


@behaviour("content-length-negative", "connect", r"Content-Length",
           "an answer with a negative Content-Length")
def content_length_negative(s):
    value = s.pick("-1", "-9223372036854775808", "-99999999999999999999")
    step_answer(s, lambda r, a: s.answer(r, headers=[f"Content-Length: {value}"]) + b"v=0\r\n")
    s.hold()


@behaviour("content-length-unparseable", "connect", r"Content-Length",
           "an answer whose Content-Length is no number, beyond 64 bits, or said twice")
def content_length_unparseable(s):
    headers = s.pick(("beyond 64 bits", ["Content-Length: 99999999999999999999999"]), ("12abc", ["Content-Length: 12abc"]),
                     ("hexadecimal", ["Content-Length: 0x10"]), ("empty", ["Content-Length:"]),
                     ("twice", ["Content-Length: 5", "Content-Length: 500000"]))
    step_answer(s, lambda r, a: s.answer(r, headers=headers) + b"v=0\r\n")
    s.hold()


@behaviour("body-too-large", "connect", r"Content-Length|body|large",
           "DESCRIBE's answer says 100 MiB of SDP and sends 8 MiB of it")
def body_too_large(s):
    s.serve_until("DESCRIBE", lambda r: s.answer(r, headers=["Content-Type: application/sdp", "Content-Length: 104857600"]))
    line = b"a=x-pad:" + b"0" * 120 + b"\r\n"
    chunk = line * (65536 // len(line))
    for _ in range((8 << 20) // len(chunk)):
        s.send(chunk)
    s.hold()


@behaviour("header-flood", "connect", r"header",
           "an answer whose head never ends: one 250 KB line without a newline, a 300 KB one, or 30,000 lines")
def header_flood(s):
    flood = s.pick(("one 250 KB line", b"X-Pad: " + b"a" * 250_000), ("one 300 KB line", b"X-Pad: " + b"a" * 300_000),
                   ("30,000 lines", b"".join(b"X-Pad-%d: %d\r\n" % (i, i) for i in range(30_000))))
    method = s.pick("OPTIONS", "DESCRIBE")
    s.serve_until(method, lambda r: f"RTSP/1.0 200 OK\r\nCSeq: {r.cseq}\r\n".encode() + flood)
    s.hold()


@behaviour("bad-status-line", "connect", r"status",
           "an answer whose first line is not RTSP/1.0, a status of three digits and a reason")
def bad_status_line(s):
    line = s.pick(b"HTTP/1.1 200 OK", b"RTSP/1.0 2OO OK", b"RTSP/1.0 99999999999999999999 OK", b"RTSP/1.0 -200 OK",
                  b"RTSP/1.0", b"\x00\xff\xfe\x80 \x81", b"", b"RTSP/9.9 200 OK", b"RTSP/1.0 1000 OK")
    s.variant = repr(line)[2:-1]
    step_answer(s, lambda r, a: line + b"\r\n" + a.partition(b"\r\n")[2])
    s.hold()


@behaviour("missing-cseq", "stream", r"CSeq",
           "answers without CSeq, or with another request's, a negative or a 20-digit one, or two")
def missing_cseq(s):
    kind = s.pick("none", "another request's", "negative", "20 digits", "two")
    def bad(request, answer):
        head, sep, body = answer.partition(b"\r\n\r\n")
        lines = [l for l in head.split(b"\r\n") if not l.startswith(b"CSeq:")]
        extra = {"none": [], "another request's": [b"CSeq: 999"], "negative": [b"CSeq: -1"],
                 "20 digits": [b"CSeq: 99999999999999999999"], "two": [b"CSeq: %s" % request.cseq.encode(), b"CSeq: 7"]}[kind]
        return b"\r\n".join(lines[:1] + extra + lines[1:]) + sep + body
    for method in ["OPTIONS", "DESCRIBE", "SETUP", "PLAY"]:
        s.serve_until(method, lambda r: bad(r, s.default_answer(r)))
    s.play(seconds=3)
    s.end()


@behaviour("endless-401", "connect", r"401|password|unauthori[sz]ed|authenticat",
           "every request answered 401 with a fresh challenge (Digest with new nonces, stale, Basic, an unknown scheme, a 60 KB nonce)")
def endless_401(s):
    kind = s.pick("digest", "digest stale", "basic", "unknown scheme", "60 KB nonce", "digest without nonce")
    while True:
        request = s.next_request()
        nonce = "%032x" % s.rng.getrandbits(128)
        challenge = {"digest": f'Digest realm="hostile camera", nonce="{nonce}", algorithm=MD5',
                     "digest stale": f'Digest realm="hostile camera", nonce="{nonce}", stale=true',
                     "basic": 'Basic realm="hostile camera"',
                     "unknown scheme": "Negotiate abc",
                     "60 KB nonce": f'Digest realm="hostile camera", nonce="{nonce * 1900}"',
                     "digest without nonce": 'Digest realm="hostile camera"'}[kind]
        s.send(s.answer(request, 401, "Nope", [f"WWW-Authenticate: {challenge}"]))


@behaviour("redirect", "connect", r"redirect",
           "every request answered with a 3xx: to itself, to a port nobody listens on, to no address, or without Location")
def redirect(s):
    status = s.pick(301, 302, 303, 305, 307, 399)
    location = s.pick(("to itself", [f"Location: {s.base}"]), ("to a closed port", ["Location: rtsp://127.0.0.1:1/gone"]),
                      ("to no address", ["Location: ::nowhere::"]), ("without Location", []))
    while True:
        request = s.next_request()
        s.send(s.answer(request, status, "Elsewhere", location))


@behaviour("sdp-malformed", "connect", r"SDP",
           "DESCRIBE's SDP is empty, has no video, a video line without payload type or with a 21-digit one, is binary, or is 200 KB")
def sdp_malformed(s):
    body = s.pick(("empty", b""), ("no media", s.sdp(video=[])), ("audio only", s.sdp(video=["m=audio 0 RTP/AVP 8"])),
                  ("m=video without payload type", s.sdp(video=["m=video 0 RTP/AVP", "a=control:trackID=0"])),
                  ("21-digit payload type", s.sdp(video=["m=video 0 RTP/AVP 999999999999999999999", "a=rtpmap:999999999999999999999 H264/90000"])),
                  ("binary", bytes(s.rng.getrandbits(8) for _ in range(600))),
                  ("200 KB", s.sdp() + b"a=x-pad:" + b"0" * 200_000 + b"\r\n"))
    # Content-Length said even when the body is empty.
    s.play_after("DESCRIBE", lambda r: s.answer(r, headers=["Content-Type: application/sdp", f"Content-Base: {s.base}/",
                                                             f"Content-Length: {len(body)}"]) + body, seconds=3)


@behaviour("sprop-malformed", "stream", r"parameter set|SPS|sprop",
           "sprop-parameter-sets that are not base64, empty, a truncated SPS, a PPS alone, a forbidden bit, or 30 KB (the SDP stays under 64 KiB)")
def sprop_malformed(s):
    sps, pps = s.server.sps, s.server.pps
    sprop = s.pick(("not base64", "!!!!,@@@@"), ("empty", ","), ("truncated SPS", b64(sps[:1]) + "," + b64(pps)),
                   ("PPS alone", b64(pps)), ("forbidden bit", b64(bytes([sps[0] | 0x80]) + sps[1:]) + "," + b64(pps)),
                   ("30 KB", b64(bytes([0x67]) + bytes(s.rng.getrandbits(8) for _ in range(30_000)))))
    s.play_after("DESCRIBE", lambda r: s.described(r, s.sdp(sprop=sprop)), seconds=3)


@behaviour("sps-absurd", "connect", r"parameter set|SPS",
           "an SPS (in the SDP and before each keyframe) for 65536x65536 or 2^32 macroblocks, a bad id, log2_max_frame_num of 1004, chroma format 99, or of 30 KB")
def sps_absurd(s):
    sps = s.pick(("65536x65536", make_sps(4096, 4096)), ("2^32 macroblocks wide", make_sps(1 << 32, 6)),
                 ("seq_parameter_set_id 9999", make_sps(sps_id=9999)), ("log2_max_frame_num 1004", make_sps(log2_frame_minus4=1000)),
                 ("chroma_format_idc 99", make_sps(profile=100, chroma=99)),
                 # The camera's own SPS and 30 KB more: only its size is wrong.
                 ("30 KB", s.server.sps + bytes(s.rng.getrandbits(8) | 1 for _ in range(30_000))))
    s.units = [([sps if n[0] & 0x1F == 7 else n for n in nals], key) for nals, key in s.server.units]
    s.play_after("DESCRIBE", lambda r: s.described(r, s.sdp(sprop=b64(sps) + "," + b64(s.server.pps))), seconds=3)


@behaviour("session-timeout-absurd", "stream", r"timeout",
           "SETUP's Session header says timeout=99999999999, 2^63-1, 2^64, -5, 0 or abc")
def session_timeout_absurd(s):
    value = s.pick("99999999999", "9223372036854775807", "18446744073709551616", "-5", "0", "abc")
    s.play_after("SETUP", lambda r: replace_head(s.default_answer(r), b";timeout=60", b";timeout=" + value.encode()), seconds=3)


def framerate_then_silence(s, value):
    s.serve_until("DESCRIBE", lambda r: s.described(r, s.sdp(framerate=value)))
    s.serve_until("PLAY")
    s.play(count=1)
    s.hold()


@behaviour("framerate-zero", "stream", r"frame ?rate",
           "a=framerate:0 in the SDP, one picture, then silence")
def framerate_zero(s):
    framerate_then_silence(s, s.pick("0", "0.0", "-0"))


@behaviour("framerate-denormal", "stream", r"frame ?rate",
           "a=framerate:5e-324 (or another rate near zero) in the SDP, one picture, then silence")
def framerate_denormal(s):
    framerate_then_silence(s, s.pick("5e-324", "4.9e-324", "1e-300"))


@behaviour("framerate-absurd", "stream", r"frame ?rate",
           "a=framerate of nan, inf, -15, 1e308 or 15 fps in the SDP, one picture, then silence")
def framerate_absurd(s):
    framerate_then_silence(s, s.pick("nan", "inf", "-15", "1e308", "15 fps"))


@behaviour("transport-mismatch", "stream", r"transport|interleaved|channel",
           "SETUP's answer names other channels than the packets use (7-8, 999-1000), none, or UDP ports")
def transport_mismatch(s):
    transport, channel = s.pick(("interleaved=7-8, packets on 0", ("RTP/AVP/TCP;unicast;interleaved=7-8", 0)),
                                ("interleaved=999-1000", ("RTP/AVP/TCP;unicast;interleaved=999-1000", 999 & 0xFF)),
                                ("no Transport", (None, 0)),
                                ("UDP ports", ("RTP/AVP;unicast;client_port=5000-5001;server_port=6000-6001", 0)))
    def setup(r):
        head = s.default_answer(r)
        lines = [l for l in head.split(b"\r\n") if not l.startswith(b"Transport:")]
        if transport:
            lines.insert(2, b"Transport: " + transport.encode())
        return b"\r\n".join(lines)
    s.channel = channel  # the packets' channel, whatever the answer says
    s.play_after("SETUP", setup, seconds=3)


@behaviour("one-byte-a-second", "connect", r"timed out|timeout|slow",
           "the answer to OPTIONS or DESCRIBE trickles in at one byte a second")
def one_byte_a_second(s):
    method = s.pick("OPTIONS", "DESCRIBE")
    request = s.serve_until(method, lambda r: b"")
    for byte in s.default_answer(request):
        s.send(bytes([byte]))
        s.hold(1)
    s.hold()


def reset_after(method):
    def run(s):
        s.serve_until(method)
        s.end(reset=s.pick("RST", "FIN") == "RST")
    return run


for _method in ["OPTIONS", "DESCRIBE", "SETUP", "PLAY"]:
    behaviour(f"reset-after-{_method.lower()}", "connect", r"ended|reset|closed",
              f"the connection is reset (RST) or closed (FIN) right after the answer to {_method}")(reset_after(_method))


@behaviour("reset-mid-answer", "connect", r"ended|reset|closed",
           "the connection is reset or closed halfway through DESCRIBE's answer")
def reset_mid_answer(s):
    reset = s.pick("RST", "FIN") == "RST"
    request = s.serve_until("DESCRIBE", lambda r: b"")
    answer = s.default_answer(request)
    s.send(answer[:len(answer) // 2])
    time.sleep(0.2)
    s.end(reset=reset)


@behaviour("reset-mid-packet", "stream", r"ended|reset|closed",
           "after a second of video, the connection is reset or closed halfway through an RTP packet")
def reset_mid_packet(s):
    reset = s.pick("RST", "FIN") == "RST"
    s.start_streaming()
    nals, _ = s.next_unit()
    packet = s.packets(nals, s.ts)[-1]
    s.send(packet[:max(2, len(packet) // 2)])
    time.sleep(0.2)
    s.end(reset=reset)


@behaviour("silent-after-play", "connect", r"timed out|stall|no video",
           "PLAY is answered, then nothing is sent")
def silent_after_play(s):
    s.serve_until("PLAY")
    s.hold()


@behaviour("no-keyframe", "connect", r"key ?frame",
           "only P-frames, never a keyframe")
def no_keyframe(s):
    s.serve_until("PLAY")
    s.play(seconds=s.server.hold, keyframes=False)
    s.end()


@behaviour("timestamp-step-back", "stream", r"timestamp",
           "right after the first keyframe, or after a second of video, each picture's RTP timestamp 0x7FFFFFFF before the one before it")
def timestamp_step_back(s):
    if s.pick("right after the first keyframe", "after a second of video") == "after a second of video":
        s.start_streaming()
    else:
        s.serve_until("PLAY")
        s.play(count=1)
    s.ts = s.last_ts - 0x7FFFFFFF
    s.play(seconds=2, step=lambda ts: ts - 0x7FFFFFFF)
    s.end()


@behaviour("timestamp-leap-forward", "stream", r"timestamp",
           "after a second of video, 45,000 pictures as fast as the client reads, each 0x7FFFFFFF after the one before")
def timestamp_leap_forward(s):
    s.start_streaming()
    s.ts = s.last_ts + 0x7FFFFFFF
    s.play(count=45_000, step=lambda ts: ts + 0x7FFFFFFF, paced=False)
    s.end()


@behaviour("timestamp-jumps", "stream", r"timestamp",
           "after a second of video, timestamps that jump both ways (an hour, a minute, 2^30 ticks), repeat, or creep by one tick")
def timestamp_jumps(s):
    s.start_streaming()
    jumps = [90000 * 3600, -90000 * 60, 1 << 30, -(1 << 30), 0, 1]
    s.play(seconds=2, step=lambda ts: ts + s.rng.choice(jumps))
    s.end()


@behaviour("marker-never", "stream", r"picture.*(large|limit)",
           "after a second of video, one picture whose FU-A fragments go on without end or marker bit (up to --runaway-mib), then silence")
def marker_never(s):
    s.start_streaming()
    nals, _ = s.next_unit()
    slice_ = [n for n in nals if n[0] & 0x1F in (1, 5)][0]
    head = bytes([(slice_[0] & 0xE0) | 28, 0x80 | (slice_[0] & 0x1F)])
    s.send(interleaved(rtp(head + slice_[1:], s.seq, s.ts, False), s.channel))
    s.seq += 1
    middle = bytes([(slice_[0] & 0xE0) | 28, slice_[0] & 0x1F]) + bytes(s.rng.getrandbits(8) for _ in range(MTU))
    per_chunk = 700
    chunk = bytearray(b"".join(interleaved(rtp(middle, 0, s.ts, False), s.channel) for _ in range(per_chunk)))
    size = len(chunk) // per_chunk
    sent = 0
    while sent < s.server.runaway:
        for i in range(per_chunk):
            struct.pack_into(">H", chunk, i * size + 6, s.seq & 0xFFFF)
            s.seq += 1
        s.send(bytes(chunk))
        sent += len(chunk)
    s.hold()


def mangled_play(s, split=None, mangle=None):
    s.start_streaming()
    s.play(seconds=2, split=split, mangle=mangle)
    s.end()


@behaviour("rtp-bad-header", "stream", r"RTP",
           "after a second of video, packets with RTP version 0, 1 or 3, 15 CSRCs in 40 bytes, an extension or padding past the packet, padding 0, or 5 bytes")
def rtp_bad_header(s):
    kind = s.pick("version 0", "version 1", "version 3", "15 CSRCs in 40 bytes", "extension past the packet",
                  "padding past the payload", "padding 0", "5-byte packet")
    def mangle(packets):
        out = []
        for p in packets:
            channel, header = p[1], bytearray(p[4:])
            if kind.startswith("version"):
                header[0] = (int(kind[-1]) << 6) | (header[0] & 0x3F)
            elif kind == "15 CSRCs in 40 bytes":
                header[0] |= 0x0F
                header = header[:40]
            elif kind == "extension past the packet":
                header[0] |= 0x10
                header[12:12] = b"\xBE\xDE\xFF\xFF"
            elif kind == "padding past the payload":
                # Cut to 52 bytes first: padding of 255 within a longer packet would be valid
                # RTP that removes real data, which no client could tell from a good packet.
                header[0] |= 0x20
                header = header[:52] + b"\xff"
            elif kind == "padding 0":
                header[0] |= 0x20
                header.append(0)
            else:
                header = header[:5]
            out.append(interleaved(bytes(header), channel))
        return out
    mangled_play(s, mangle=mangle)


def always_fragmented(nals, keep):
    """Parameter sets in a STAP-A; every other unit as FU-A fragments of at most 100 bytes (at
    least two), those `keep(index, count)` allows."""
    sets = [n for n in nals if n[0] & 0x1F in (7, 8)]
    out = [stap_a(sets)] if sets else []
    for n in nals:
        if n[0] & 0x1F in (7, 8):
            continue
        parts = fragments(n, max(3, min(100, len(n) // 2 + 2)))
        out += [f for i, f in enumerate(parts) if keep(i, len(parts))]
    return out


@behaviour("fu-without-start", "stream", r"fragment",
           "after a second of video, units sent as FU-A fragments without their start fragment")
def fu_without_start(s):
    mangled_play(s, split=lambda nals: always_fragmented(nals, lambda i, n: i > 0))


@behaviour("fu-without-end", "stream", r"fragment",
           "after a second of video, units sent as FU-A fragments without their end fragment, or with a second start in the middle")
def fu_without_end(s):
    if s.pick("no end", "two starts") == "no end":
        mangled_play(s, split=lambda nals: always_fragmented(nals, lambda i, n: i < n - 1))
    else:
        def two_starts(nals):
            out = always_fragmented(nals, lambda i, n: True)
            return [bytes([p[0], p[1] | 0x80]) + p[2:] if p[0] & 0x1F == 28 and not p[1] & 0xC0 else p for p in out]
        mangled_play(s, split=two_starts)


@behaviour("stap-overrun", "stream", r"aggregat",
           "after a second of video, STAP-A packets whose unit sizes run past the packet (65535, one too many, a stray byte, 0)")
def stap_overrun(s):
    kind = s.pick("65535", "one too many", "stray byte", "size 0")
    def split(nals):
        out = []
        for n in nals:
            size = {"65535": 0xFFFF, "one too many": len(n) + 1, "size 0": 0}.get(kind, len(n))
            out.append(bytes([(n[0] & 0x60) | 24]) + struct.pack(">H", size) + n + (b"\x07" if kind == "stray byte" else b""))
        return out
    mangled_play(s, split=split)


@behaviour("interleaved-junk", "stream", r"interleaved|RTP",
           "after a second of video, junk between packets: bytes that are no packet, packets on an unknown channel, 65535 bytes of zeros on the RTP channel")
def interleaved_junk(s):
    kind = s.pick("bytes that are no packet", "unknown channel", "65535-byte frame")
    def mangle(packets):
        junk = {"bytes that are no packet": bytes(s.rng.getrandbits(7) | 0x80 for _ in range(300)),
                "unknown channel": interleaved(bytes(s.rng.getrandbits(8) for _ in range(1000)), 77),
                "65535-byte frame": struct.pack(">BBH", 0x24, 0, 0xFFFF) + bytes(0xFFFF)}[kind]
        return [junk] + packets
    mangled_play(s, mangle=mangle)


@behaviour("sequence-jumps", "stream", r"lost|sequence",
           "after a second of video, RTP sequence numbers that jump at random")
def sequence_jumps(s):
    mangled_play(s, mangle=lambda packets: [p[:6] + struct.pack(">H", s.rng.getrandbits(16)) + p[8:] for p in packets])


@behaviour("sequence-wrap", "never", r"connected",
           "good video whose RTP sequence numbers wrap past 65535 and whose timestamps wrap past 2^32")
def sequence_wrap(s):
    s.seq = 65536 - 40
    s.ts = (1 << 32) - 20 * TICKS
    good(s)


@behaviour("stale-session", "never", r"earlier session",
           "before this session's video, packets of an earlier one: another SSRC, and sequence numbers "
           "before the first that the PLAY answer's RTP-Info announces (some Reolink and live555 cameras)")
def stale_session(s):
    first_seq, first_ts = s.seq, s.ts
    s.serve_until("PLAY", lambda request: s.answer(request, headers=[
        f"Session: {s.session_id}", "Range: npt=0.000-", f"RTP-Info: url={s.base}/trackID=0;seq={first_seq};rtptime={first_ts}"]))
    stale = []
    for i in range(20):
        packet = rtp(b"\x41\x9a" + bytes(40), (first_seq - 500 + i) & 0xFFFF, (first_ts - 90000 + (i // 5) * TICKS) & 0xFFFFFFFF, i % 5 == 4)
        stale.append(interleaved(packet[:8] + struct.pack(">I", 0x0BADCAFE) + packet[12:], s.channel))
    s.send(b"".join(stale))
    s.play(seconds=3 if s.scheduled else None)
    s.end()


@behaviour("good", "never", r"connected",
           "a camera that behaves: 3 s of video, then an orderly close (streams on under /behaviour/good)")
def good(s):
    s.serve_until("PLAY")
    s.play(seconds=3 if s.scheduled else None)
    s.end()

# ---------------------------------------------------------------- dialects

DIALECTS = {}


def dialect(name, what):
    def register(run):
        DIALECTS[name] = {"name": name, "fails": "never", "expect": "", "what": what, "run": run}
        return run
    return register


def h264_media(s, fmtp=None, control="a=control:trackID=0", extra=(), control_first=False):
    """The video section of an H.264 camera's SDP; `fmtp` replaces its fmtp line."""
    sps, pps = s.server.sps, s.server.pps
    fmtp = fmtp if fmtp is not None else f"a=fmtp:{PT} packetization-mode=1;profile-level-id={sps[1:4].hex()};sprop-parameter-sets={b64(sps)},{b64(pps)}"
    lines = [f"m=video 0 RTP/AVP {PT}", f"a=rtpmap:{PT} H264/90000", fmtp, *extra]
    return [lines[0], control, *lines[1:]] if control_first else [*lines, control]


def serve_dialect(s, media=None, base=None, setup_headers=None, split=None):
    """The handshake answered as the dialect's camera does (`media`: the SDP's media sections;
    `base`: the Content-Base; `setup_headers(request)`: SETUP's headers), then video until the
    client leaves. Like a strict camera it refuses (400) a request whose URL is not an absolute
    URL of this camera."""
    while True:
        request = s.next_request()
        if not request.url.startswith(s.base):
            s.send(s.answer(request, 400, "Bad Request"))
        elif request.method == "DESCRIBE":
            body = s.sdp(video=media if media is not None else h264_media(s))
            s.send(s.answer(request, headers=["Content-Type: application/sdp", f"Content-Base: {base if base is not None else s.base + '/'}"], body=body))
        elif request.method == "SETUP" and setup_headers:
            s.send(s.answer(request, headers=setup_headers(request)))
        elif request.method == "PLAY":
            s.send(s.default_answer(request))
            s.play(split=split)
        else:
            s.send(s.default_answer(request))


@dialect("fmtp-order-and-spacing", "fmtp parameters in another order, with spaces around the semicolons")
def fmtp_order_and_spacing(s):
    sps, pps = s.server.sps, s.server.pps
    serve_dialect(s, h264_media(s, fmtp=f"a=fmtp:{PT} sprop-parameter-sets={b64(sps)},{b64(pps)} ; packetization-mode=1;  profile-level-id={sps[1:4].hex().upper()}"))


@dialect("sprop-only-in-sdp", "parameter sets only in the SDP's sprop-parameter-sets, none in the stream")
def sprop_only_in_sdp(s):
    s.units = [([n for n in nals if n[0] & 0x1F not in (7, 8)], key) for nals, key in s.server.units]
    serve_dialect(s)


@dialect("sprop-only-in-band", "no sprop-parameter-sets in the SDP: the parameter sets come with each keyframe")
def sprop_only_in_band(s):
    serve_dialect(s, h264_media(s, fmtp=f"a=fmtp:{PT} packetization-mode=1;profile-level-id={s.server.sps[1:4].hex()}"))


@dialect("control-first", "a=control before a=rtpmap in the video section")
def control_first(s):
    serve_dialect(s, h264_media(s, control_first=True))


@dialect("control-absolute", "an absolute control URL (rtsp://host:port/…/trackID=1)")
def control_absolute(s):
    serve_dialect(s, h264_media(s, control=f"a=control:{s.base}/trackID=1"))


@dialect("control-star", "a=control:* in the video section (SETUP to the base itself)")
def control_star(s):
    serve_dialect(s, h264_media(s, control="a=control:*"))


@dialect("base-without-slash", "a Content-Base without its trailing slash, a relative control")
def base_without_slash(s):
    serve_dialect(s, base=s.base)


@dialect("base-without-scheme", "a Content-Base without rtsp:// (host:port/path/), as some firmware sends")
def base_without_scheme(s):
    serve_dialect(s, base=s.base.split("://", 1)[1] + "/")


@dialect("session-spelling", "a Session header with spaces around its parts and a timeout")
def session_spelling(s):
    serve_dialect(s, setup_headers=lambda r: [f"Transport: RTP/AVP/TCP;unicast;interleaved=0-1", f"Session:   {s.session_id} ; timeout=60"])


def ssrc_dialect(spelling):
    def run(s):
        serve_dialect(s, setup_headers=lambda r: [f"Transport: RTP/AVP/TCP;unicast;interleaved=0-1;ssrc={spelling}", f"Session: {s.session_id};timeout=60"])
    return run


dialect("ssrc-hex", "ssrc=5EED0001 in SETUP's Transport (8 hex digits, the RFC's form)")(ssrc_dialect("5EED0001"))
dialect("ssrc-decimal", "ssrc=1592590337 (decimal) in SETUP's Transport")(ssrc_dialect("1592590337"))
dialect("ssrc-0x", "ssrc=0x5EED0001 in SETUP's Transport")(ssrc_dialect("0x5EED0001"))
dialect("ssrc-odd-width", "ssrc=5EED1 (5 hex digits) in SETUP's Transport")(ssrc_dialect("5EED1"))


@dialect("audio-and-onvif-metadata", "an audio track before the video and an ONVIF metadata track after it")
def audio_and_onvif_metadata(s):
    audio = ["m=audio 0 RTP/AVP 8", "a=rtpmap:8 PCMA/8000", "a=control:trackID=1"]
    metadata = ["m=application 0 RTP/AVP 107", "a=rtpmap:107 vnd.onvif.metadata/90000", "a=control:trackID=2"]
    serve_dialect(s, audio + h264_media(s) + metadata)


@dialect("dimensions-and-framerate", "a=x-dimensions, a=framerate:15.000000 and a=x-framerate lines")
def dimensions_and_framerate(s):
    serve_dialect(s, h264_media(s, extra=("a=x-dimensions:160,90", "a=framerate:15.000000", "a=x-framerate:15")))


@dialect("digest-without-qop", "Digest authentication without qop (RFC 2069), checked: a wrong answer is 401 again")
def digest_without_qop(s):
    realm, nonce = "dialect camera", "%032x" % s.rng.getrandbits(128)
    md5 = lambda text: hashlib.md5(text.encode()).hexdigest()
    while True:
        request = s.next_request()
        fields = dict((k.strip(), v.strip().strip('"')) for k, _, v in
                      (part.partition("=") for part in request.headers.get("authorization", "").removeprefix("Digest ").split(",")))
        user, password = "viewer", "dialect-secret"
        expected = md5(f"{md5(f'{user}:{realm}:{password}')}:{nonce}:{md5(request.method + ':' + fields.get('uri', ''))}")
        if fields.get("username") != user or fields.get("response") != expected or "qop" in fields:
            s.send(s.answer(request, 401, "Unauthorized", [f'WWW-Authenticate: Digest realm="{realm}", nonce="{nonce}"']))
            continue
        s.buf = first_request_bytes(request) + s.buf
        break
    # Authorized: the rest as any camera (each request keeps its Authorization, unchecked).
    serve_dialect(s)


def hevc_media(s, sprop):
    return [f"m=video 0 RTP/AVP {PT}", f"a=rtpmap:{PT} H265/90000", f"a=fmtp:{PT} {sprop}", "a=control:trackID=0"]


@dialect("h265-dahua", "H.265 with sprop-sps, sprop-pps, sprop-vps in that order in the SDP and no parameter sets in the stream")
def h265_dahua(s):
    vps, sps, pps, s.units = s.server.hevc(in_band=False)
    serve_dialect(s, hevc_media(s, f"sprop-sps={b64(sps)};sprop-pps={b64(pps)};sprop-vps={b64(vps)}"), split=hevc_payloads)


@dialect("h265-in-band", "H.265 with the parameter sets in the SDP (VPS, SPS, PPS) and before each keyframe")
def h265_in_band(s):
    vps, sps, pps, s.units = s.server.hevc(in_band=True)
    serve_dialect(s, hevc_media(s, f"sprop-vps={b64(vps)}; sprop-sps={b64(sps)}; sprop-pps={b64(pps)}"), split=hevc_payloads)

# ---------------------------------------------------------------- the server

def schedule(seed, session, skip=()):
    """The behaviour of session `session` of /hostile/SEED (never one of `skip`), and the
    generator of its variant."""
    names = sorted(set(BEHAVIOURS) - set(skip))
    rounds, index = divmod(session, len(names))
    random.Random(f"order {seed} {rounds}").shuffle(names)
    return names[index], random.Random(f"variant {seed} {session}")


class Server:
    def __init__(self, args):
        self.sps, self.pps, self.units = canned_stream()
        self.hold = args.hold_seconds
        self.runaway = args.runaway_mib << 20
        self.skip = [name for name in args.skip.split(",") if name]
        self.log = open(args.log, "a") if args.log else None
        self.lock = threading.Lock()
        self.sessions = {}
        self.hevc_streams = {}
        self.listener = socket.create_server(("127.0.0.1", args.port))
        self.port = self.listener.getsockname()[1]

    def hevc(self, in_band):
        """The canned H.265 stream (made at first use: only dialect sessions need it)."""
        with self.lock:
            if in_band not in self.hevc_streams:
                self.hevc_streams[in_band] = canned_hevc(in_band)
            return self.hevc_streams[in_band]

    def serve(self):
        while True:
            conn, _ = self.listener.accept()
            threading.Thread(target=self.session, args=(conn,), daemon=True).start()

    def session(self, conn):
        s = Session(self, conn)
        record = {"path": None, "seed": None, "session": None, "behaviour": None, "variant": "", "fails": None,
                  "expect": None, "start": time.time()}
        outcome = "?"
        try:
            first = s.next_request()
            path = "/" + first.url.split("://", 1)[-1].split("/", 1)[-1] if "://" in first.url else first.url
            parts = path.strip("/").split("/")
            if len(parts) < 2 or parts[0] not in ("hostile", "behaviour", "dialect"):
                s.send(s.answer(first, 404, "Nope"))
                raise Gone("no such path")
            key = "/" + parts[0] + "/" + parts[1]
            s.base = first.url.split("/" + parts[0] + "/")[0] + key
            with self.lock:
                number = self.sessions.get(key, 0)
                self.sessions[key] = number + 1
            if parts[0] == "hostile":
                seed = int(parts[1]) if parts[1].isdigit() else parts[1]
                name, s.rng = schedule(seed, number, self.skip)
                s.scheduled = True
                record["seed"] = seed
            else:
                name = parts[1]
                table = DIALECTS if parts[0] == "dialect" else BEHAVIOURS
                if name not in table:
                    s.send(s.answer(first, 404, "Nope"))
                    raise Gone("no such behaviour")
                s.rng = random.Random(f"variant {name} {number}")
            entry = (DIALECTS if parts[0] == "dialect" else BEHAVIOURS)[name]
            record.update(path=key, session=number, behaviour=name, fails=entry["fails"], expect=entry["expect"])
            s.seq = s.rng.getrandbits(16)
            s.ts = s.rng.getrandbits(32)
            s.buf = first_request_bytes(first) + s.buf
            entry["run"](s)
            outcome = "the behaviour ran to its end"
        except Gone as e:
            outcome = str(e)
        except Exception as e:  # a bug here must not stop the other sessions
            outcome = f"server error: {type(e).__name__}: {e}"
            print(outcome, file=sys.stderr, flush=True)
        finally:
            try:
                conn.close()
            except OSError:
                pass
            record.update(variant=s.variant, end=time.time(), sent=s.sent, outcome=outcome)
            if self.log and record["behaviour"]:
                with self.lock:
                    self.log.write(json.dumps(record) + "\n")
                    self.log.flush()


def first_request_bytes(request):
    """The first request again, so that the behaviour sees every request from the first."""
    lines = [f"{request.method} {request.url} RTSP/1.0"] + [f"{k}: {v}" for k, v in request.headers.items()]
    return ("\r\n".join(lines) + "\r\n\r\n").encode("latin-1")


def main():
    p = argparse.ArgumentParser()
    p.add_argument("--port", type=int, default=0)
    p.add_argument("--log", help="append one JSON line per session to this file")
    p.add_argument("--runaway-mib", type=int, default=512, help="how much marker-never sends of its endless picture")
    p.add_argument("--hold-seconds", type=float, default=30,
                   help="the longest a session stays silent waiting for the client to give up")
    p.add_argument("--skip", default="", help="behaviours (comma-separated) the /hostile/ schedules leave out")
    p.add_argument("--table", action="store_true", help="print the behaviours, one JSON object a line, and exit")
    p.add_argument("--dialects", action="store_true", help="print the dialects, one JSON object a line, and exit")
    a = p.parse_args()
    if a.table or a.dialects:
        for entry in (DIALECTS if a.dialects else BEHAVIOURS).values():
            print(json.dumps({k: v for k, v in entry.items() if k != "run"}))
        return
    server = Server(a)
    print(f"PORT {server.port}", flush=True)
    server.serve()


if __name__ == "__main__":
    main()
