"""Decodes XRootD redirect-stream (`r`) packets with the third-party
xrootdlib package (xrootdlib.structs.XrdXrootdMon) and prints one line per
redirect record: its operation, the target host, the path (NULs cut) and
whether it names a user (dictid > 0), sorted. Ports, ids and times are left
out (they differ between runs, and the stock records its own port).

xrootdlib reads a redirect's slot count as one more than the stock sends
it, so it may also see an extra empty time mark after a redirect; those
are not printed.

Used by tests/monitor_redirects.rs: python xrootdlib_redirects.py
PACKETS.hex, one datagram in hex per line. Any packet xrootdlib cannot
decode is an error.
"""
import sys

from xrootdlib.structs.XrdXrootdMon import Packet
from xrootdlib.structs.XrdXrootdMon.redir import Redirect

lines = []
with open(sys.argv[1]) as packets:
    for hexed in packets:
        p = Packet.from_buffer(bytes.fromhex(hexed.strip()))
        if p.header.code != b"r":
            continue
        for rec in p.record.records:
            if isinstance(rec, Redirect):
                lines.append("redirect %s %s %s user=%d" % (
                    rec.subtype.name,
                    rec.server.decode(),
                    bytes(rec.path).rstrip(b"\0").decode(),
                    rec.dictid > 0,
                ))
for line in sorted(lines):
    print(line)
