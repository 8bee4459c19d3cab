#!/usr/bin/env python3
"""Recording TCP relay for XRootD golden vectors (loopback only, stdlib only).

Run by hand (see README.md and make_vectors.sh), never by CI.

  capture.py relay LISTEN_PORT UPSTREAM_PORT OUTDIR NAME
      Listen on 127.0.0.1:LISTEN_PORT, relay every accepted connection to
      127.0.0.1:UPSTREAM_PORT and, when both directions have closed, write
      OUTDIR/NAME.c2s (client -> server bytes) and OUTDIR/NAME.s2c
      (server -> client bytes). The second and later connections are written
      as NAME.2.c2s / NAME.2.s2c, ... Stops on SIGINT/SIGTERM.

  capture.py run UPSTREAM_PORT OUTDIR NAME -- COMMAND ARGS...
      Start the relay on a free 127.0.0.1 port, run COMMAND with every
      '{url}' in its arguments replaced by 'root://127.0.0.1:PORT' and
      '{port}' by PORT, wait until every relayed connection has closed, write
      the files as above and exit with COMMAND's status.

  capture.py dump FILE.c2s|FILE.s2c
      Print the frames of a captured stream (a quick look; the Rust test
      tests/golden_frames.rs is the real check).

Bytes are written exactly as they crossed the relay: nothing is parsed,
reordered or rewritten.
"""
import os
import signal
import socket
import struct
import subprocess
import sys
import threading

HOST = "127.0.0.1"


class Recorder:
    """Accepts connections, relays them and records both directions."""

    def __init__(self, listen_port, upstream_port, outdir, name):
        self.upstream_port = upstream_port
        self.outdir = outdir
        self.name = name
        self.lsock = socket.socket(socket.AF_INET, socket.SOCK_STREAM)
        self.lsock.setsockopt(socket.SOL_SOCKET, socket.SO_REUSEADDR, 1)
        self.lsock.bind((HOST, listen_port))
        self.lsock.listen(16)
        self.port = self.lsock.getsockname()[1]
        self.lock = threading.Lock()
        self.count = 0
        self.active = 0
        self.idle = threading.Condition(self.lock)
        self.files = []

    def serve(self):
        while True:
            try:
                csock, _ = self.lsock.accept()
            except OSError:
                return
            with self.lock:
                self.count += 1
                self.active += 1
                index = self.count
            threading.Thread(target=self.connection, args=(csock, index), daemon=True).start()

    def connection(self, csock, index):
        c2s, s2c = bytearray(), bytearray()
        try:
            ssock = socket.create_connection((HOST, self.upstream_port))
            for s in (csock, ssock):
                s.setsockopt(socket.IPPROTO_TCP, socket.TCP_NODELAY, 1)
            a = threading.Thread(target=pump, args=(csock, ssock, c2s))
            b = threading.Thread(target=pump, args=(ssock, csock, s2c))
            a.start()
            b.start()
            a.join()
            b.join()
            ssock.close()
        finally:
            csock.close()
            stem = self.name if index == 1 else "%s.%d" % (self.name, index)
            for ext, data in (("c2s", c2s), ("s2c", s2c)):
                path = os.path.join(self.outdir, "%s.%s" % (stem, ext))
                with open(path, "wb") as f:
                    f.write(data)
            with self.lock:
                self.files.append("%s.{c2s,s2c} (%d + %d bytes)" % (stem, len(c2s), len(s2c)))
                self.active -= 1
                self.idle.notify_all()

    def wait_idle(self, timeout):
        with self.lock:
            return self.idle.wait_for(lambda: self.active == 0, timeout)

    def close(self):
        self.lsock.close()


def pump(src, dst, record):
    """Copies src to dst until EOF, appending every byte to record."""
    while True:
        try:
            data = src.recv(1 << 16)
        except OSError:
            data = b""
        if not data:
            break
        record += data
        try:
            dst.sendall(data)
        except OSError:
            break
    try:
        dst.shutdown(socket.SHUT_WR)
    except OSError:
        pass


def cmd_relay(argv):
    listen_port, upstream_port, outdir, name = int(argv[0]), int(argv[1]), argv[2], argv[3]
    rec = Recorder(listen_port, upstream_port, outdir, name)
    print("relaying 127.0.0.1:%d -> 127.0.0.1:%d" % (rec.port, upstream_port), flush=True)
    signal.signal(signal.SIGTERM, lambda *_: rec.close())
    try:
        rec.serve()
    except KeyboardInterrupt:
        rec.close()
    rec.wait_idle(10)
    for f in rec.files:
        print("wrote", f)


def cmd_run(argv):
    if "--" not in argv:
        sys.exit("usage: capture.py run UPSTREAM_PORT OUTDIR NAME -- COMMAND ARGS...")
    sep = argv.index("--")
    upstream_port, outdir, name = int(argv[0]), argv[1], argv[2]
    command = argv[sep + 1:]
    rec = Recorder(0, upstream_port, outdir, name)
    threading.Thread(target=rec.serve, daemon=True).start()
    url = "root://%s:%d" % (HOST, rec.port)
    command = [a.replace("{url}", url).replace("{port}", str(rec.port)) for a in command]
    rc = subprocess.call(command)
    if not rec.wait_idle(30):
        sys.exit("capture: connections still open 30 s after the command exited")
    rec.close()
    for f in sorted(rec.files):
        print("%s: wrote %s" % (name, f))
    if rec.count == 0:
        sys.exit("capture: the command made no connection")
    sys.exit(rc)


def cmd_dump(argv):
    path = argv[0]
    data = open(path, "rb").read()
    pos = 0
    if path.endswith(".c2s"):
        print("handshake", struct.unpack(">5i", data[:20]))
        pos = 20
        while pos + 24 <= len(data):
            sid, rid, params, dlen = struct.unpack(">2sH16si", data[pos:pos + 24])
            extra = 0
            if rid == 3031:  # kXR_writev: data follows the list, outside dlen
                lst = data[pos + 24:pos + 24 + dlen]
                extra = sum(struct.unpack(">i", lst[i + 4:i + 8])[0] for i in range(0, dlen, 16))
            payload = data[pos + 24:pos + 24 + min(dlen, 64)]
            print("@%d sid=%s req=%d params=%s dlen=%d %r" % (pos, sid.hex(), rid, params.hex(), dlen, payload))
            pos += 24 + dlen + extra
    else:
        while pos + 8 <= len(data):
            sid, status, dlen = struct.unpack(">2sHi", data[pos:pos + 8])
            total = dlen
            if status == 4007:  # kXR_status: bdy.dlen data follows
                total += struct.unpack(">i", data[pos + 20:pos + 24])[0]
            body = data[pos + 8:pos + 8 + min(total, 64)]
            print("@%d sid=%s status=%d dlen=%d total=%d %r" % (pos, sid.hex(), status, dlen, total, body))
            pos += 8 + total
    print("end at %d of %d%s" % (pos, len(data), "" if pos == len(data) else "  LEFTOVER"))


def main():
    if len(sys.argv) < 2 or sys.argv[1] not in ("relay", "run", "dump"):
        sys.exit(__doc__)
    {"relay": cmd_relay, "run": cmd_run, "dump": cmd_dump}[sys.argv[1]](sys.argv[2:])


if __name__ == "__main__":
    main()
