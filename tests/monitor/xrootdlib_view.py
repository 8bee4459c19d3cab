"""Decodes XRootD detailed-monitoring packets with the third-party
xrootdlib package (xrootdlib.structs.XrdXrootdMon) and prints what a
collector learns of them, without what differs between runs (ids, pids,
times), sorted: one `user` line per login (protocol, user, host, the
authentication keys of the login detail), one `file` line per file (path, size at open, read-write, bytes
read, read by readv, written, the ops block), one `disc` line per login
whose disconnect the file stream told.

Used by tests/monitor_stock.rs: python xrootdlib_view.py PACKETS.hex, one
datagram in hex per line. Any packet xrootdlib cannot decode is an error.
"""
import sys

from xrootdlib.structs.XrdXrootdMon import Packet
from xrootdlib.structs.XrdXrootdMon.fstat import FileCLS, FileDSC, FileOPN, FileTOD, FileXFR
from xrootdlib.structs.XrdXrootdMon.map import AuthInfo


def text(b):
    return b.decode() if isinstance(b, (bytes, bytearray)) else ("" if b is None else str(b))


users, opens, lines, discs = {}, {}, [], []
with open(sys.argv[1]) as packets:
    for hexed in packets:
        p = Packet.from_buffer(bytes.fromhex(hexed.strip()))
        code, r = p.header.code, p.record
        if code == b"u":
            u, a = r.userid, r.payload
            assert isinstance(a, AuthInfo), a
            # the login detail as xrootdlib reads it: only its `auth` keys
            # (p, n, h, o, r, g, m), which neither server sends without `auth`
            detail = " ".join("%s=%s" % (k, text(getattr(a, k))) for k in "pnhorgm")
            users[r.dictid] = "%s/%s@%s %s" % (text(u.prot), text(u.user), text(u.host), detail)
        elif code == b"f":
            for rec in r.records:
                if isinstance(rec, FileOPN):
                    opens[rec.fileid] = "%s open size=%d rw=%d" % (
                        text(bytes(rec.lfn)),
                        rec.filesize,
                        rec.flags & 0x02 != 0,
                    )
                elif isinstance(rec, FileCLS):
                    o = rec.ops
                    ops = (
                        o.read, o.readv, o.write, o.rsmin, o.rsmax, o.rsegs,
                        o.rdmin, o.rdmax, o.rvmin, o.rvmax, o.wrmin, o.wrmax,
                    )
                    lines.append("file %s | close forced=%d read=%d readv=%d write=%d ops=%s" % (
                        opens.pop(rec.fileid), rec.flags & 0x01 != 0,
                        rec.read, rec.readv, rec.write, ops,
                    ))
                elif isinstance(rec, FileDSC):
                    discs.append(rec.dictid)
                elif not isinstance(rec, (FileTOD, FileXFR)):
                    raise SystemExit("unexpected f-stream record %r" % (rec,))

assert not opens, opens
for line in sorted("user " + u for u in users.values()):
    print(line)
for line in sorted(lines):
    print(line)
for line in sorted("disc " + users[d] for d in discs):
    print(line)
