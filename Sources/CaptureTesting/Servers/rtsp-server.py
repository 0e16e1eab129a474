#!/usr/bin/python3
"""A real RTSP camera on loopback for Vigil's tests and benchmarks (gst-rtsp-server).

Run with Debian's /usr/bin/python3 (it has `gi`). Prints "PORT <n>" once it listens.
  rtsp-server.py [--port N] [--codec h264|h265|mjpeg] [--size WxH] [--fps N] [--gop N]
                 [--user U --password P [--digest]] [--session-timeout S] [--audio] [--mounts N]
                 [--one-encoder] [--pattern NAME] [--scroll PIXELS] [--bitrate KBPS]
The stream is at rtsp://127.0.0.1:PORT/cam (every client shares one live encoder); with
--mounts N, at /cam0 … /camN-1 as well, each its own camera (its own encoder). With
--one-encoder every mount sends the same encoded stream, so many cameras cost one encoder
(for benchmarks of the recorder at a node's camera count). The picture is videotestsrc's
bouncing ball (a few dozen kbit/s in H.264); --pattern smpte --scroll 7 gives bars that move
every frame, a few Mbit/s as a real 1080p camera sends."""
import argparse, fractions, sys, time
import gi
gi.require_version("Gst", "1.0")
gi.require_version("GstRtspServer", "1.0")
gi.require_version("GstRtsp", "1.0")
from gi.repository import Gst, GstRtsp, GstRtspServer, GLib

p = argparse.ArgumentParser()
p.add_argument("--port", type=int, default=0)
p.add_argument("--codec", choices=["h264", "h265", "mjpeg"], default="h264")
p.add_argument("--size", default="320x240")
p.add_argument("--fps", type=float, default=15, help="frames per second, e.g. 12.5")
p.add_argument("--gop", type=int, default=15, help="keyframe interval in frames")
p.add_argument("--bframes", type=int, default=0, help="B-frames between references (H.264): frames arrive out of presentation order")
p.add_argument("--user")
p.add_argument("--password")
p.add_argument("--digest", action="store_true", help="ask for Digest authentication instead of Basic")
p.add_argument("--session-timeout", type=int, default=0,
               help="close the connection of a client that sends no request for S seconds, as strict cameras do")
p.add_argument("--audio", action="store_true", help="send G.711 A-law audio beside the video, as many cameras do")
p.add_argument("--mounts", type=int, default=0)
p.add_argument("--one-encoder", action="store_true",
               help="serve /cam and every /camN from one encoder (one shared media) instead of one each")
p.add_argument("--pattern", default="ball", help="videotestsrc's pattern (ball, smpte, snow, …)")
p.add_argument("--scroll", type=int, default=0, help="pixels the pattern moves to the side each frame")
p.add_argument("--bitrate", type=int, default=0, help="H.264/H.265 bitrate ceiling in kbit/s (default: the encoder's)")
p.add_argument("--max-sessions", type=int, default=0, help="clients at once (1: a camera that takes one client at a time; 0: no limit)")
a = p.parse_args()
w, h = a.size.split("x")
rate = fractions.Fraction(a.fps).limit_denominator(1001)
Gst.init(None)
bitrate = f" bitrate={a.bitrate}" if a.bitrate else ""
if a.codec == "h264":
    # zerolatency and the ultrafast preset would both switch B-frames off.
    tune = "tune=zerolatency speed-preset=ultrafast" if a.bframes == 0 else "speed-preset=superfast b-adapt=false"
    # B-frames need a profile above baseline, which the payloader would otherwise settle for.
    profile = " ! video/x-h264,profile=main" if a.bframes else ""
    enc = f"x264enc {tune}{bitrate} bframes={a.bframes} key-int-max={a.gop}{profile} ! rtph264pay name=pay0 pt=96 config-interval=-1"
elif a.codec == "mjpeg":
    # RTP carries only 4:2:0 and 4:2:2 JPEG (RFC 2435).
    enc = "videoconvert ! video/x-raw,format=I420 ! jpegenc quality=70 ! rtpjpegpay name=pay0 pt=26"
else:
    enc = f"x265enc tune=zerolatency speed-preset=ultrafast{bitrate} key-int-max={a.gop} ! rtph265pay name=pay0 pt=96 config-interval=-1"
launch = (f"( videotestsrc is-live=true pattern={a.pattern} horizontal-speed={a.scroll} ! video/x-raw,width={w},height={h},framerate={rate.numerator}/{rate.denominator} "
          f"! {enc} "
          + ("audiotestsrc is-live=true ! audio/x-raw,rate=8000,channels=1 ! alawenc ! rtppcmapay name=pay1 pt=8 " if a.audio else "")
          + ")")
server = GstRtspServer.RTSPServer()
if a.max_sessions > 0:
    server.get_session_pool().set_max_sessions(a.max_sessions)
server.set_address("127.0.0.1")
server.set_service(str(a.port))
class OneMediaFactory(GstRtspServer.RTSPMediaFactory):
    """A shared factory keeps one media per key, and the key is the URL's path by default:
    one key for every path makes every mount of this factory share one media, one encoder."""
    def do_gen_key(self, url):
        return "one-encoder"
factory = OneMediaFactory() if a.one_encoder else GstRtspServer.RTSPMediaFactory()
factory.set_launch(launch)
factory.set_shared(True)
if a.user:
    auth = GstRtspServer.RTSPAuth()
    token = GstRtspServer.RTSPToken()
    token.set_string(GstRtspServer.RTSP_TOKEN_MEDIA_FACTORY_ROLE, "user")
    if a.digest:
        auth.set_supported_methods(GstRtsp.RTSPAuthMethod.DIGEST)
        auth.add_digest(a.user, a.password, token)
    else:
        auth.add_basic(GstRtspServer.RTSPAuth.make_basic(a.user, a.password), token)
    server.set_auth(auth)
    perms = GstRtspServer.RTSPPermissions()
    perms.add_permission_for_role("user", GstRtspServer.RTSP_PERM_MEDIA_FACTORY_ACCESS, True)
    perms.add_permission_for_role("user", GstRtspServer.RTSP_PERM_MEDIA_FACTORY_CONSTRUCT, True)
    factory.set_permissions(perms)
def make_factory():
    if a.one_encoder:
        return factory
    f = GstRtspServer.RTSPMediaFactory()
    f.set_launch(launch)
    f.set_shared(True)
    return f
server.get_mount_points().add_factory("/cam", factory)
for n in range(a.mounts):
    server.get_mount_points().add_factory(f"/cam{n}", make_factory())
if a.session_timeout:
    # A strict camera: a client that sends no request for the timeout loses its connection
    # (gst-rtsp-server itself never expires a session streamed over TCP).
    last_request = {}
    def touched(client, context):
        last_request[client] = time.monotonic()
    def connected(server, client):
        last_request[client] = time.monotonic()
        for name in ["options-request", "describe-request", "setup-request", "play-request",
                     "get-parameter-request", "set-parameter-request"]:
            client.connect(name, touched)
        client.connect("closed", lambda c: last_request.pop(c, None))
        # Said in SETUP's answer (Session: id;timeout=S), as cameras say theirs.
        client.connect("new-session", lambda c, session: session.set_timeout(a.session_timeout))
    server.connect("client-connected", connected)
    def expire():
        now = time.monotonic()
        for client, t in list(last_request.items()):
            if now - t > a.session_timeout:
                last_request.pop(client, None)
                client.close()
        return True
    GLib.timeout_add(200, expire)
if server.attach(None) == 0:
    sys.exit("could not listen")
print(f"PORT {server.get_bound_port()}", flush=True)
GLib.MainLoop().run()
