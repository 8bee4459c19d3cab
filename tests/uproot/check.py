"""NanoAOD-like ROOT files written and read back with uproot, for tests/uproot_stock.rs.

    python check.py write DIR             writes DIR/nano_0.root ... (deterministic)
    python check.py read LOCATION HANDLER reads every file, prints two lines

LOCATION is a directory on disk or a URL prefix such as root://127.0.0.1:1094//;
HANDLER is `file` (uproot.source.file.MemmapSource), `xrootd`
(uproot.source.xrootd.XRootDSource, the XRootD Python bindings) or `fsspec`
(uproot.source.fsspec.FSSpecSource, which goes through fsspec-xrootd for
root:// URLs). The first line is `source CLASS [DIR]`: the source uproot
really used (for fsspec also the filesystem below it) and the directory the
XRootD bindings were loaded from. The second is one JSON object
giving, per file, the entry and branch counts, sums of flat and jagged
branches, the multiplicity counts, a digest of every branch's values and a
sum over a narrower read of a range of entries.
"""

import hashlib
import json
import os
import sys

import awkward as ak
import numpy as np
import uproot

FILES = 3
EVENTS = 6000
CHUNKS = 6  # one basket per branch per chunk: several baskets, as in real files
TRIGGERS = 120
SUMMED = ["MET_pt", "Jet_pt", "Jet_eta", "Muon_pt", "Electron_pt", "event", "HLT_path_7"]
COUNTED = ["nJet", "nMuon", "nElectron"]


def collection(rng, n, mean, fields):
    """A jagged collection over `n` events, `mean` objects per event
    (Poisson), with `fields` {name: (kind, a, b)}: `exp` (exponential of
    scale a, plus b), `uni` (uniform in [a, b)) as float32, `int` (in [a, b))
    as int32. Written as nNAME and NAME_field branches, as in NanoAOD."""
    counts = rng.poisson(mean, n)
    total = int(counts.sum())
    content = {}
    for name, (kind, a, b) in fields.items():
        if kind == "exp":
            values = (rng.exponential(a, total) + b).astype(np.float32)
        elif kind == "uni":
            values = rng.uniform(a, b, total).astype(np.float32)
        else:
            values = rng.integers(a, b, total, dtype=np.int32)
        content[name] = ak.unflatten(values, counts)
    return ak.zip(content)


def chunk(rng, first, n):
    """Events `first .. first + n`: NanoAOD-like flat branches, three jagged
    collections and TRIGGERS boolean trigger bits."""
    out = {
        "run": np.full(n, 1, dtype=np.uint32),
        "luminosityBlock": (np.arange(first, first + n) // 500 + 1).astype(np.uint32),
        "event": np.arange(first, first + n, dtype=np.uint64),
        "MET_pt": rng.exponential(30.0, n).astype(np.float32),
        "MET_phi": rng.uniform(-np.pi, np.pi, n).astype(np.float32),
        "PV_npvs": rng.poisson(30, n).astype(np.int32),
        "Jet": collection(rng, n, 5, {
            "pt": ("exp", 40.0, 15.0), "eta": ("uni", -4.7, 4.7),
            "phi": ("uni", -np.pi, np.pi), "mass": ("exp", 8.0, 0.0),
            "btagDeepFlavB": ("uni", 0.0, 1.0), "jetId": ("int", 0, 7),
        }),
        "Muon": collection(rng, n, 1.2, {
            "pt": ("exp", 20.0, 3.0), "eta": ("uni", -2.4, 2.4),
            "phi": ("uni", -np.pi, np.pi), "pfRelIso04_all": ("exp", 0.1, 0.0),
            "charge": ("int", -1, 2),
        }),
        "Electron": collection(rng, n, 0.8, {
            "pt": ("exp", 20.0, 5.0), "eta": ("uni", -2.5, 2.5),
            "phi": ("uni", -np.pi, np.pi), "cutBased": ("int", 0, 5),
        }),
    }
    for t in range(TRIGGERS):
        out[f"HLT_path_{t}"] = rng.random(n) < (t + 1) / (TRIGGERS + 2)
    return out


def write(directory):
    for i in range(FILES):
        rng = np.random.default_rng(1234 + i)
        with uproot.recreate(f"{directory}/nano_{i}.root") as f:
            per = EVENTS // CHUNKS
            for c in range(CHUNKS):
                data = chunk(rng, i * EVENTS + c * per, per)
                if c == 0:
                    tree = f.mktree("Events", data)  # a TTree, as NanoAOD (not an RNTuple)
                else:
                    tree.extend(data)


def digest(array):
    """sha256 of an array's values (its awkward buffers, in a fixed order)."""
    form, length, buffers = ak.to_buffers(ak.Array(array))
    h = hashlib.sha256(form.to_json().encode())
    h.update(str(length).encode())
    for key in sorted(buffers):
        h.update(key.encode())
        h.update(np.ascontiguousarray(buffers[key]).tobytes())
    return h.hexdigest()


def source_name(source):
    """The class of the source, for fsspec the filesystem class below it, and
    for a remote source the directory of the XRootD bindings' extension."""
    name = type(source).__name__
    fs = getattr(source, "_fs", None)
    if fs is not None:
        name = f"{name}/{type(fs).__name__}"
    if "pyxrootd.client" in sys.modules:
        name += " " + os.path.dirname(os.path.realpath(sys.modules["pyxrootd.client"].__file__))
    return name


def read(location, handler):
    options = {}
    if handler == "xrootd":
        options["handler"] = uproot.source.xrootd.XRootDSource
    elif handler == "fsspec":
        options["handler"] = uproot.source.fsspec.FSSpecSource
    elif handler == "file":
        options["handler"] = uproot.source.file.MemmapSource
    else:
        raise SystemExit(f"unknown handler {handler}")
    sep = "" if location.endswith("/") else "/"
    report = {}
    sources = set()
    for i in range(FILES):
        name = f"nano_{i}.root"
        with uproot.open(f"{location}{sep}{name}", **options) as f:
            tree = f["Events"]
            arrays = tree.arrays(library="ak")
            entry = {
                "entries": tree.num_entries,
                "branches": len(tree.keys()),
                "sums": {b: float(ak.sum(arrays[b])) for b in SUMMED},
                "counts": {b: int(ak.sum(arrays[b])) for b in COUNTED},
                "jagged": int(ak.sum(ak.num(arrays["Jet_pt"]))),
                "digest": digest(arrays),
            }
            # a second, narrower read: a few branches over a range of entries
            part = tree.arrays(["Jet_pt", "Muon_eta", "MET_phi"], entry_start=1234, entry_stop=4321)
            entry["range_sum"] = float(ak.sum(part["Jet_pt"]) + ak.sum(part["Muon_eta"]) + ak.sum(part["MET_phi"]))
            report[name] = entry
            sources.add(source_name(f.file.source))
    sys.stdout.write("source %s\n" % ",".join(sorted(sources)))
    json.dump(report, sys.stdout, sort_keys=True)
    sys.stdout.write("\n")


if __name__ == "__main__":
    if sys.argv[1:2] == ["write"] and len(sys.argv) == 3:
        write(sys.argv[2])
    elif sys.argv[1:2] == ["read"] and len(sys.argv) == 4:
        read(sys.argv[2], sys.argv[3])
    else:
        raise SystemExit(__doc__)
