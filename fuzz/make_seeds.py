#!/usr/bin/env python3
"""Writes fuzz/seeds/<target>/ from the golden vectors in tests/vectors/.

Run by hand after the vectors change: python3 fuzz/make_seeds.py
Each seed is one input shaped the way its target reads it (see the comment at
the top of each fuzz_targets/*.rs). Large pgread frames are cut to their
first 8 pages so that the fuzzer stays fast.
"""
import hashlib, os, pathlib, shutil, struct

ROOT = pathlib.Path(__file__).resolve().parent.parent
VEC = ROOT / "tests" / "vectors"
OUT = ROOT / "fuzz" / "seeds"


def responses(stream):
    """(status, body) of each response frame; the first is the handshake reply."""
    at = 0
    while at + 8 <= len(stream):
        _sid, status, dlen = struct.unpack(">2sHi", stream[at:at + 8])
        body_len = dlen
        if status == 4007:
            body_len += struct.unpack(">i", stream[at + 20:at + 24])[0]
        yield status, stream[at + 8:at + 8 + body_len]
        at += 8 + body_len


def write(target, data):
    d = OUT / target
    d.mkdir(parents=True, exist_ok=True)
    (d / hashlib.sha1(data).hexdigest()[:16]).write_bytes(data)


MADE_HERE = ["request_frame", "response_frame", "status_pgread", "redirect_url", "readv_body",
             "dirlist_stat", "exchange", "redirect_target"]


def main():
    # only the targets made here (the others' seeds are written by hand or by their tests)
    for t in MADE_HERE:
        shutil.rmtree(OUT / t, ignore_errors=True)
    for c2s in sorted(VEC.glob("*.c2s")):
        req = c2s.read_bytes()[:16384]
        s2c = c2s.with_suffix(".s2c").read_bytes()
        write("request_frame", b"\x01" + req)  # odd first byte: handshake first
        write("response_frame", s2c[:16384])
        # exchange: requests after the 20-byte handshake, responses after the
        # 16-byte handshake reply; every request first, and one answer after each
        reqs, resps = c2s.read_bytes()[20:][:16384], s2c[16:][:65536]
        for burst in (0, 1):
            write("exchange", struct.pack(">HB", len(reqs), burst) + reqs + resps)
        oks = b""
        for status, body in responses(s2c):
            if status in (0, 4000):
                oks += body
            if status == 4007:
                write("status_pgread", b"\x01" + body[:32 + 8 * 4100])
            if status == 4004:
                write("redirect_url", body)
                write("redirect_target", b"\x01" + body)
        if c2s.stem == "readv":
            write("readv_body", max((b for s, b in responses(s2c) if s == 0), key=len))
        if c2s.stem.startswith("dirlist"):
            write("dirlist_stat", b"\x00" + [b for s, b in responses(s2c) if s == 0][-1])
        if c2s.stem.startswith("stat"):
            for status, body in responses(s2c):
                if status == 0 and body[:1].isdigit():
                    write("dirlist_stat", b"\x01" + body)
    write("dirlist_stat", b"\x02" + b"1 2048 0 1 0 0\x00")
    for url in [b"root://alice:pw@host.example:2094//data/f.root?xrdcl.intent=a&authz=t",
                b"roots://[::1]//tmp/x", b"xroot://h/p?a=1&b"]:
        write("redirect_url", url)
    # redirect bodies: port > 0 with opaque and token, port 0, -1 (URL), flags
    for port, host in [(1094, b"ds1.example?cms.tried=x?tok"), (0, b"host:1"),
                       (-1, b"root://h:1//f?x=1"), (~0x3000, b"root://h//f")]:
        write("redirect_url", struct.pack(">i", port) + host)
    # redirect_target: a byte choosing the URL redirected from (below 0x80 one
    # of the target's three, else the length of one given here), then a body
    for port, host in [(2094, b"[::127.0.0.1]?tried=mgr"), (2094, b"fe80::1:2"),
                       (0, b"[::1]:2000?x=2&org=b?authz=t"), (0, b"ds1:2000"),
                       (-1, b"roots://bob@[::1]:2000//other?a=1"), (~0x1000, b"ds4:5"),
                       (-1, b"http://web/x")]:
        for choice in (0, 1, 2):
            write("redirect_target", bytes([choice]) + struct.pack(">i", port) + host)
    from_url = b"root://u:p@h.example:1//p?xrdcl.intent=k&a=1"
    write("redirect_target", bytes([0x80 | len(from_url)]) + from_url
          + struct.pack(">i", 0) + b"ds1?a=2")
    for t in MADE_HERE:
        print(t, len(os.listdir(OUT / t)))


main()
