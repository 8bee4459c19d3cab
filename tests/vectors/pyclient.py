#!/usr/bin/env python3
"""The Python-binding (XRootD.client 5.5.3) side of the golden-vector scenarios.

usage: /usr/bin/python3 pyclient.py URL SCENARIO

One scenario per process, so each is one TCP connection. Exits non-zero when
a call does not give the result the scenario expects (an error scenario
expects its error). Run through capture.py (see make_vectors.sh).
"""
import sys

from XRootD import client
from XRootD.client.flags import OpenFlags, QueryCode


def pattern(offset, size):
    """The content of every data file: byte i of the file is (i * 7) % 251."""
    return bytes(((offset + i) * 7) % 251 for i in range(size))


def check(status, want_ok=True):
    if status.ok != want_ok:
        sys.exit("unexpected status: %s" % status)


def opened(url, path, flags=OpenFlags.READ, mode=0):
    f = client.File()
    st, _ = f.open(url + "/" + path, flags, mode)
    check(st)
    return f


def main():
    url, scenario = sys.argv[1], sys.argv[2]
    fs = client.FileSystem(url)
    if scenario == "ping":
        st, _ = fs.ping()
        check(st)
    elif scenario == "open_read":
        f = opened(url, "/small.bin")
        st, data = f.read(0, 5000)
        check(st)
        assert data == pattern(0, 5000), "small.bin content"
        check(f.close()[0])
    elif scenario == "stat_handle":
        f = opened(url, "/big.bin")
        st, info = f.stat(force=True)
        check(st)
        assert info.size == 300000, info.size
        check(f.close()[0])
    elif scenario == "read_eof":
        f = opened(url, "/small.bin")
        st, data = f.read(4900, 200)
        check(st)
        assert data == pattern(4900, 100), len(data)
        check(f.close()[0])
    elif scenario == "readv":
        chunks = [(0, 100), (5000, 4096), (200000, 1000)]
        f = opened(url, "/big.bin")
        st, vr = f.vector_read(chunks)
        check(st)
        for (off, size), c in zip(chunks, vr.chunks):
            assert (c.offset, c.length) == (off, size), (c.offset, c.length)
            assert c.buffer == pattern(off, size), off
        check(f.close()[0])
    elif scenario == "open_write":
        f = opened(url, "/written.bin", OpenFlags.NEW, 0o644)
        check(f.write(pattern(0, 5000), 0)[0])
        check(f.close()[0])
    elif scenario == "open_missing":
        f = client.File()
        st, _ = f.open(url + "//missing.bin", OpenFlags.READ)
        check(st, want_ok=False)
        assert st.errno == 3011, st  # kXR_NotFound
    elif scenario == "query_config":
        st, answer = fs.query(QueryCode.CONFIG, "readv_iov_max readv_ior_max version")
        check(st)
    elif scenario == "query_checksum":
        # The first query computes the checksum (kXR_waitresp, then kXR_attn
        # asynresp); the second is answered from the server's cache.
        for _ in range(2):
            st, answer = fs.query(QueryCode.CHECKSUM, "/big.bin")
            check(st)
    else:
        sys.exit("unknown scenario " + scenario)


if __name__ == "__main__":
    main()
