#!/usr/bin/python3
"""A plain TCP proxy on loopback (standard library only), for Vigil's cluster, network-camera
and chaos tests.

  tcp-proxy.py --upstream HOST:PORT [--port P] [--rtp-jumps]
Passes every connection's bytes both ways to HOST:PORT. Listens on P (default: a free port) and
prints "PORT <p>" once it does.
A test cuts one node off from the database, or stalls a camera, by stopping this process
(SIGSTOP): the kernel still completes connects, but no byte goes through either way, as in a
network partition; SIGCONT heals it.
With --rtp-jumps, what the upstream (an RTSP camera, RTP interleaved in its TCP connection)
sends is read message by message, and SIGUSR1 sets the camera's clock 20 s forward, SIGUSR2
20 s back: the RTP timestamps of every packet from then on are moved by that much, as a
camera's whose clock was set."""
import argparse, signal, socket, struct, sys, threading

p = argparse.ArgumentParser()
p.add_argument("--upstream", required=True, help="HOST:PORT to pass connections to")
p.add_argument("--port", type=int, default=0, help="the port to listen on (0: a free one)")
p.add_argument("--rtp-jumps", action="store_true", help="SIGUSR1/SIGUSR2 move the RTP timestamps 20 s forward/back")
args = p.parse_args()
host, port = args.upstream.rsplit(":", 1)

JUMP_TICKS = 20 * 90000
offset = 0  # 90 kHz ticks added to every RTP timestamp from the upstream


def jump(ticks):
    def handler(signum, frame):
        global offset
        offset += ticks
    return handler


if args.rtp_jumps:
    signal.signal(signal.SIGUSR1, jump(JUMP_TICKS))
    signal.signal(signal.SIGUSR2, jump(-JUMP_TICKS))
    # A test process that waits for signals on a thread of its own blocks them, and its children
    # inherit that mask: unblocked here, or they would stay pending.
    signal.pthread_sigmask(signal.SIG_UNBLOCK, {signal.SIGUSR1, signal.SIGUSR2})


def next_message(buffer):
    """The length of the whole message at the start of `buffer` (an interleaved packet, or an
    RTSP message with its body), or None while it is incomplete."""
    if buffer[:1] == b"$":
        return 4 + struct.unpack(">H", buffer[2:4])[0] if len(buffer) >= 4 else None
    end = buffer.find(b"\r\n\r\n")
    if end < 0:
        return None
    length = 0
    for line in buffer[:end].split(b"\r\n"):
        name, _, value = line.partition(b":")
        if name.strip().lower() == b"content-length" and value.strip().isdigit():
            length = int(value.strip())
    return end + 4 + length


class Rewriter:
    """Moves the RTP timestamps of one connection by `offset`, taking a new offset only where a
    new picture begins (a new timestamp), so no picture's packets are split between two."""

    def __init__(self):
        self.original = None  # the upstream's timestamp of the picture under way
        self.applied = 0

    def __call__(self, message):
        if message[:1] != b"$" or message[1] % 2 or len(message) < 16 or message[4] >> 6 != 2:
            return message
        stamp = struct.unpack(">I", message[8:12])[0]
        if stamp != self.original:
            self.original, self.applied = stamp, offset
        if self.applied == 0:
            return message
        return message[:8] + struct.pack(">I", (stamp + self.applied) % (1 << 32)) + message[12:]


def pump(source, sink, rtp=False):
    pending = b""
    rewrite = Rewriter()
    try:
        while True:
            data = source.recv(65536)
            if not data:
                break
            if not rtp:
                sink.sendall(data)
                continue
            pending += data
            out = []
            while (length := next_message(pending)) is not None and len(pending) >= length:
                out.append(rewrite(pending[:length]))
                pending = pending[length:]
            if len(pending) > 1 << 20:  # not RTSP after all: passed on as it is, from here on
                out.append(pending)
                pending = b""
                rtp = False
            sink.sendall(b"".join(out))
        sink.sendall(pending)
    except OSError:
        pass
    for s in (source, sink):
        try:
            s.shutdown(socket.SHUT_RDWR)
        except OSError:
            pass


def serve(client):
    try:
        upstream = socket.create_connection((host, int(port)), timeout=5)
        upstream.settimeout(None)
    except OSError:
        client.close()
        return
    threading.Thread(target=pump, args=(client, upstream), daemon=True).start()
    threading.Thread(target=pump, args=(upstream, client, args.rtp_jumps), daemon=True).start()


listener = socket.socket(socket.AF_INET, socket.SOCK_STREAM)
listener.setsockopt(socket.SOL_SOCKET, socket.SO_REUSEADDR, 1)
listener.bind(("127.0.0.1", args.port))
listener.listen(64)
print("PORT %d" % listener.getsockname()[1], flush=True)
while True:
    connection, _ = listener.accept()
    serve(connection)
