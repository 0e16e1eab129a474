#!/usr/bin/python3
"""A plain TCP proxy on loopback (standard library only), for Vigil's cluster tests.

  tcp-proxy.py --upstream HOST:PORT [--port P]
Passes every connection's bytes both ways to HOST:PORT. Listens on P (default: a free port) and
prints "PORT <p>" once it does.
A test cuts one node off from the database by stopping this process (SIGSTOP): the kernel
still completes connects, but no byte goes through either way, as in a network partition;
SIGCONT heals it."""
import argparse, socket, sys, threading

p = argparse.ArgumentParser()
p.add_argument("--upstream", required=True, help="HOST:PORT to pass connections to")
p.add_argument("--port", type=int, default=0, help="the port to listen on (0: a free one)")
args = p.parse_args()
host, port = args.upstream.rsplit(":", 1)


def pump(source, sink):
    try:
        while True:
            data = source.recv(65536)
            if not data:
                break
            sink.sendall(data)
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
    threading.Thread(target=pump, args=(upstream, client), daemon=True).start()


listener = socket.socket(socket.AF_INET, socket.SOCK_STREAM)
listener.setsockopt(socket.SOL_SOCKET, socket.SO_REUSEADDR, 1)
listener.bind(("127.0.0.1", args.port))
listener.listen(64)
print("PORT %d" % listener.getsockname()[1], flush=True)
while True:
    connection, _ = listener.accept()
    serve(connection)
