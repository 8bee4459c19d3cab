#!/usr/bin/env python3
"""Writes a NanoAOD-like ROOT file: one TTree "Events" with ~1000 branches
and small baskets, deterministically (seeded numpy, fixed UUID and dates, so
the same arguments give the same bytes).

    python make_nanoaod.py OUT.root [--events 100000] [--cluster 2000] [--seed 1]

Like CMS NanoAOD:
- ~650 trigger bits (HLT_*, L1_*, Flag_*), bool, mostly false;
- ~60 event-level scalars (run, event, MET_*, PV_*, ...), float32/int32;
- ~20 collections stored as jagged branches with a counter (nJet, Jet_pt,
  Jet_eta, ...), float32/int32/bool fields;
- float32 mantissas truncated to 10 bits, as NanoAOD stores most floats, so
  they compress like the real thing;
- every branch gets one basket per cluster of `--cluster` events (one
  uproot `extend` call each), so baskets are small: at 2000 events, a few
  hundred bytes for a trigger bit, ~5 kB for an event-level float, 20-35 kB
  for a float of a busy collection.
"""

import argparse
import datetime
import types
import uuid

import awkward as ak
import numpy as np
import uproot
from reproducible import pin_hash_seed

# (collection, mean multiplicity, number of fields)
COLLECTIONS = [
    ("Jet", 3.5, 24),
    ("Muon", 0.8, 30),
    ("Electron", 0.8, 30),
    ("Photon", 0.6, 22),
    ("Tau", 0.8, 22),
    ("FatJet", 0.4, 24),
    ("SubJet", 0.8, 12),
    ("GenPart", 6.0, 8),
    ("GenJet", 4.0, 6),
    ("GenJetAK8", 0.5, 6),
    ("TrigObj", 3.0, 8),
    ("IsoTrack", 1.0, 12),
    ("SV", 1.5, 12),
    ("LHEPart", 2.0, 6),
    ("GenVisTau", 0.3, 8),
    ("GenDressedLepton", 0.8, 5),
    ("SoftActivityJet", 3.0, 3),
    ("CorrT1METJet", 2.0, 4),
    ("OtherPV", 3.0, 1),
    ("boostedTau", 0.2, 12),
]
# Field names every analysis looks for; the rest are field<i>.
NAMED_FIELDS = ["pt", "eta", "phi", "mass", "charge", "pdgId", "jetId", "btagDeepFlavB",
                "tightId", "pfRelIso03_all", "cutBased", "genPartFlav", "dxy", "dz"]
EVENT_SCALARS = (
    [f"MET_{v}" for v in ("pt", "phi", "sumEt", "significance", "covXX", "covXY", "covYY")]
    + [f"PuppiMET_{v}" for v in ("pt", "phi", "sumEt", "ptJERUp", "ptJERDown", "ptJESUp")]
    + [f"RawMET_{v}" for v in ("pt", "phi", "sumEt")]
    + [f"ChsMET_{v}" for v in ("pt", "phi", "sumEt")]
    + [f"TkMET_{v}" for v in ("pt", "phi", "sumEt")]
    + [f"CaloMET_{v}" for v in ("pt", "phi", "sumEt")]
    + [f"GenMET_{v}" for v in ("pt", "phi")]
    + [f"PV_{v}" for v in ("x", "y", "z", "chi2", "ndof", "score")]
    + [f"fixedGridRhoFastjet{v}" for v in ("All", "CentralCalo", "CentralChargedPileUp", "Central")]
    + [f"Pileup_{v}" for v in ("nTrueInt", "pudensity", "gpudensity")]
    + [f"LHE_{v}" for v in ("HT", "HTIncoming", "Vpt", "AlphaS")]
    + [f"Generator_{v}" for v in ("binvar", "scalePDF", "weight", "x1", "x2", "xpdf1", "xpdf2")]
    + ["genWeight", "LHEWeight_originalXWGTUP", "btagWeight_DeepCSVB", "L1PreFiringWeight_Nom",
       "L1PreFiringWeight_Up", "L1PreFiringWeight_Dn", "puWeight", "puWeightUp"]
)
EVENT_INTS = ["run", "luminosityBlock", "PV_npvs", "PV_npvsGood", "Pileup_nPU",
              "Generator_id1", "Generator_id2", "LHE_Njets", "LHE_Nb", "LHE_Nglu",
              "HTXS_njets25", "HTXS_stage_0", "genTtbarId", "SV_dummyFlag"]
N_HLT, N_L1, N_FLAGS = 480, 150, 22


def truncate(x):
    """float32 with a 10-bit mantissa (NanoAOD's usual precision)."""
    bits = np.asarray(x, dtype=np.float32).view(np.uint32)
    return (bits & np.uint32(0xFFFFE000)).view(np.float32)


def field_kind(name, i):
    """float, int or bool, fixed per field name."""
    if name in ("charge", "pdgId", "jetId", "tightId", "cutBased", "genPartFlav"):
        return "int"
    if i % 9 == 8:
        return "bool"
    if i % 4 == 3:
        return "int"
    return "float"


def schema():
    """[(collection, mean, [(field, kind)])] in a fixed order."""
    out = []
    for name, mean, nfields in COLLECTIONS:
        names = (NAMED_FIELDS + [f"field{i}" for i in range(len(NAMED_FIELDS), nfields)])[:nfields]
        out.append((name, mean, [(f, field_kind(f, i)) for i, f in enumerate(names)]))
    return out


class Generator:
    """Per-branch parameters drawn once from the seed, values per cluster."""

    def __init__(self, seed):
        self.rng = np.random.default_rng(seed)
        rng = self.rng
        self.collections = schema()
        self.scales = {}
        for name, _, fields in self.collections:
            for f, _kind in fields:
                self.scales[f"{name}_{f}"] = (rng.uniform(0.5, 80.0), int(rng.integers(2, 12)))
        for s in EVENT_SCALARS:
            self.scales[s] = (rng.uniform(0.5, 300.0), 0)
        trig = ([f"HLT_Path{i:03d}" for i in range(N_HLT)]
                + [f"L1_Seed{i:03d}" for i in range(N_L1)]
                + [f"Flag_Filter{i:02d}" for i in range(N_FLAGS)])
        # trigger rates: mostly rare, some common, flags almost always true
        self.rates = {t: (0.999 if t.startswith("Flag") else float(rng.choice(
            [0.0, 0.001, 0.01, 0.05, 0.2, 0.5], p=[0.3, 0.25, 0.2, 0.12, 0.08, 0.05])))
            for t in trig}
        self.event = 0

    def cluster(self, n):
        """One cluster of `n` events: {branch or collection: array}."""
        rng = self.rng
        data = {}
        data["event"] = np.arange(self.event, self.event + n, dtype=np.int64)
        self.event += n
        for s in EVENT_INTS:
            data[s] = rng.poisson(3.0 if s != "run" else 1.0, n).astype(np.int32) + (
                316000 if s == "run" else 0)
        for s in EVENT_SCALARS:
            scale, _ = self.scales[s]
            data[s] = truncate(rng.exponential(scale, n))
        for t, p in self.rates.items():
            data[t] = rng.random(n) < p
        for name, mean, fields in self.collections:
            counts = rng.poisson(mean, n)
            total = int(counts.sum())
            rec = {}
            for f, kind in fields:
                scale, imax = self.scales[f"{name}_{f}"]
                if kind == "float":
                    flat = truncate(rng.exponential(scale, total) if f != "eta" and f != "phi"
                                    else rng.uniform(-3.0, 3.0, total))
                elif kind == "int":
                    flat = rng.integers(-imax if f in ("charge", "pdgId") else 0, imax,
                                        total).astype(np.int32)
                else:
                    flat = rng.random(total) < 0.3
                rec[f] = ak.unflatten(flat, counts)
            data[name] = ak.zip(rec)
        return data


def branch_type(value):
    """What `mktree` takes for a column: a dtype, or an awkward type."""
    return value.dtype if isinstance(value, np.ndarray) else value.type


def fixed_time():
    """Pins uproot's TKey/TDirectory dates so that the file is reproducible."""
    fixed = datetime.datetime(2026, 1, 1, 0, 0, 0)

    class Fixed(datetime.datetime):
        @classmethod
        def now(cls, tz=None):
            return fixed

    for module in (uproot.writing._cascade, uproot.writing._cascadetree):
        module.datetime = types.SimpleNamespace(datetime=Fixed)


def main():
    pin_hash_seed()
    ap = argparse.ArgumentParser(description=__doc__.split("\n")[0])
    ap.add_argument("out")
    ap.add_argument("--events", type=int, default=100_000)
    ap.add_argument("--cluster", type=int, default=2000, help="events per basket")
    ap.add_argument("--seed", type=int, default=1)
    args = ap.parse_args()
    fixed_time()
    gen = Generator(args.seed)
    with uproot.recreate(args.out, compression=uproot.ZLIB(4),
                         uuid_function=lambda: uuid.UUID(int=args.seed)) as f:
        written = 0
        while written < args.events:
            n = min(args.cluster, args.events - written)
            data = gen.cluster(n)
            if written == 0:
                tree = f.mktree("Events", {k: branch_type(v) for k, v in data.items()})
            tree.extend(data)
            written += n
    nbranches = len(uproot.open(args.out)["Events"].keys())
    print(f"{args.out}: {args.events} events, {nbranches} branches, "
          f"clusters of {args.cluster} events")


if __name__ == "__main__":
    main()
