#!/usr/bin/env python3
"""Records the vector reads an uproot analysis issues over XRootD, as a
trace file for benches/cache_trace.rs.

    python record_trace.py FILE.root OUT.trace [--step 2000]

uproot's own XRootD source (`uproot.source.xrootd.XRootDSource`) runs
unmodified; what sits under it is a stand-in for the `XRootD.client`
bindings (module `XRootD` in `sys.modules`) that answers every call from the
local file and logs each `File.vector_read(chunks)` call: the list of
(offset, length) pairs, in the order uproot gives them. So the trace holds
exactly the vector reads uproot would send to a server. The stand-in reports
a `file://localhost` URL, for which uproot takes its defaults of 1024
elements and 2,097,136 bytes per element per vector read — the limits the
stock xrootd 5.5.3 announces (`readv_iov_max`, `readv_ior_max`).

The analysis: 101 branches an analysis of top-quark pairs would read (jets,
leptons, MET, weights, a dozen trigger bits and the MET filters), iterated
over all events in steps of `--step` events (one basket per branch per step
when it equals the writer's cluster size: one vector read per cluster, as
ROOT's TTreeCache issues them).

Trace format (text, one record per line):
    # comment lines
    size <file size in bytes>
    <offset>:<length> <offset>:<length> ...      one line per vector read
Offsets and lengths are decimal bytes, in the order of the call.
Plain (non-vector) reads that uproot makes while opening the file and
reading the TTree metadata are not in the trace; their count and bytes are
printed.
"""

import argparse
import os
import sys
import types

import uproot
from reproducible import pin_hash_seed


class Status:
    ok, error, code, message = True, False, 0, ""


class Chunk:
    def __init__(self, offset, length, buffer):
        self.offset, self.length, self.buffer = offset, length, buffer


class VectorReadInfo:
    def __init__(self, chunks):
        self.chunks = chunks


class StatInfo:
    def __init__(self, size):
        self.size = size


class URL:
    def __init__(self, url):
        self.protocol, rest = url.split("://", 1)
        self.hostid = rest.split("/", 1)[0]


class Log:
    vector_reads = []  # [[(offset, length)]]
    plain_reads = []  # [(offset, length)]


class File:
    """Answers the calls XRootDSource makes, from the local file."""

    local_path = None

    def open(self, url, timeout=0):
        self._f = open(File.local_path, "rb")
        return Status(), None

    def is_open(self):
        return not self._f.closed

    def close(self, timeout=0):
        self._f.close()
        return Status(), None

    def get_property(self, name):
        return "file://localhost/" + File.local_path

    def stat(self, timeout=0):
        return Status(), StatInfo(os.path.getsize(File.local_path))

    def _pread(self, offset, length):
        self._f.seek(offset)
        return self._f.read(length)

    def read(self, offset, size, timeout=0):
        Log.plain_reads.append((offset, size))
        return Status(), self._pread(offset, size)

    def vector_read(self, chunks, timeout=0, callback=None):
        chunks = [(int(o), int(n)) for o, n in chunks]
        Log.vector_reads.append(chunks)
        info = VectorReadInfo([Chunk(o, n, self._pread(o, n)) for o, n in chunks])
        callback(Status(), info, None)
        return Status()


def install_stand_in(local_path):
    """Puts the stand-in `XRootD.client` where uproot imports it from."""
    File.local_path = os.path.abspath(local_path)
    client = types.ModuleType("XRootD.client")
    client.File, client.URL = File, URL
    client.flags = types.SimpleNamespace(QueryCode=types.SimpleNamespace(CONFIG=1))
    package = types.ModuleType("XRootD")
    package.client = client
    sys.modules["XRootD"], sys.modules["XRootD.client"] = package, client


def analysis_branches(keys):
    """The branches read: a ttbar-style selection."""
    wanted = ["nJet", "nMuon", "nElectron", "run", "luminosityBlock", "event",
              "genWeight", "PV_npvs", "PV_npvsGood", "fixedGridRhoFastjetAll",
              "MET_pt", "MET_phi", "MET_sumEt", "PuppiMET_pt", "PuppiMET_phi",
              "Pileup_nTrueInt", "L1PreFiringWeight_Nom", "puWeight", "btagWeight_DeepCSVB"]
    for coll, fields in [
        ("Jet", ["pt", "eta", "phi", "mass", "jetId", "btagDeepFlavB", "charge", "pdgId",
                 "genPartFlav", "field14", "field15", "field16", "field17", "field18"]),
        ("Muon", ["pt", "eta", "phi", "mass", "charge", "pdgId", "tightId", "pfRelIso03_all",
                  "dxy", "dz", "field14", "field15"]),
        ("Electron", ["pt", "eta", "phi", "mass", "charge", "pdgId", "cutBased",
                      "pfRelIso03_all", "dxy", "dz", "field14", "field15"]),
        ("GenPart", ["pt", "eta", "phi", "mass", "pdgId", "charge"]),
        ("TrigObj", ["pt", "eta", "phi", "charge"]),
    ]:
        wanted += [f"{coll}_{f}" for f in fields]
    wanted += [f"HLT_Path{i:03d}" for i in range(0, 480, 40)]
    wanted += [k for k in keys if k.startswith("Flag_")]
    missing = [w for w in wanted if w not in keys]
    assert not missing, missing
    return wanted


def main():
    pin_hash_seed()
    ap = argparse.ArgumentParser(description=__doc__.split("\n")[0])
    ap.add_argument("root_file")
    ap.add_argument("out")
    ap.add_argument("--step", type=int, default=2000, help="events per iteration step")
    args = ap.parse_args()
    install_stand_in(args.root_file)
    size = os.path.getsize(args.root_file)
    with uproot.open("root://localhost//" + os.path.abspath(args.root_file),
                     handler=uproot.source.xrootd.XRootDSource) as f:
        tree = f["Events"]
        branches = analysis_branches(set(tree.keys()))
        opened = len(Log.plain_reads)
        events = 0
        for arrays in tree.iterate(branches, step_size=args.step, library="np"):
            events += len(arrays["event"])
        assert events == tree.num_entries, (events, tree.num_entries)
    reads = Log.vector_reads
    elements = [len(r) for r in reads]
    asked = sum(n for r in reads for _, n in r)
    with open(args.out, "w") as out:
        out.write(f"# uproot {uproot.__version__} XRootDSource vector reads: "
                  f"{len(branches)} branches of {os.path.basename(args.root_file)}, "
                  f"{events} events in steps of {args.step}\n")
        out.write(f"size {size}\n")
        for r in reads:
            out.write(" ".join(f"{o}:{n}" for o, n in r) + "\n")
    print(f"{args.out}: file {size} bytes, {len(branches)} branches, {len(reads)} vector reads, "
          f"elements per read min {min(elements)} mean {sum(elements) / len(elements):.1f} "
          f"max {max(elements)}, {asked} bytes asked "
          f"(mean element {asked / sum(elements):.0f} B); "
          f"plain reads: {len(Log.plain_reads)} ({opened} while opening), "
          f"{sum(n for _, n in Log.plain_reads)} bytes")


if __name__ == "__main__":
    main()
