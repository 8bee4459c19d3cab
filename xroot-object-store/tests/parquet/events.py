"""Parquet files for tests/datafusion_parquet.rs, written by pyarrow, and
pyarrow's own answers to the queries the test runs through DataFusion.

    python events.py DIR

writes DIR/events/part-{0,1,2}.parquet (5000 rows each, row groups of 1000,
snappy) and prints, one line per result row, the answers of

    events: SELECT nMuon, count(*), sum(MET_pt), max(MET_pt), min(run)
            FROM events WHERE MET_pt > 20 AND name <> 'bad'
            GROUP BY nMuon ORDER BY nMuon
    one:    SELECT count(*), sum(nMuon) FROM part-1 WHERE run = 3

as `events <nMuon> <count> <sum> <max> <min>` and `one <count> <sum>`.
MET_pt values are multiples of 0.25, so every sum is exact in any order.
"""

import os
import sys

import numpy as np
import pyarrow as pa
import pyarrow.compute as pc
import pyarrow.parquet as pq

out = os.path.join(sys.argv[1], "events")
os.makedirs(out, exist_ok=True)
rng = np.random.default_rng(20261202)
for part in range(3):
    n = 5000
    table = pa.table(
        {
            "run": pa.array(rng.integers(0, 10, n), pa.int32()),
            "nMuon": pa.array(rng.integers(0, 5, n), pa.int32()),
            "MET_pt": pa.array(rng.integers(0, 400, n) * 0.25, pa.float64()),
            "name": pa.array(rng.choice(["good", "bad", "ugly"], n), pa.string()),
        }
    )
    pq.write_table(
        table,
        os.path.join(out, f"part-{part}.parquet"),
        row_group_size=1000,
        compression="snappy",
    )

events = pq.read_table(out)
picked = events.filter((pc.field("MET_pt") > 20) & (pc.field("name") != "bad"))
grouped = (
    picked.group_by("nMuon")
    .aggregate([("nMuon", "count"), ("MET_pt", "sum"), ("MET_pt", "max"), ("run", "min")])
    .sort_by("nMuon")
)
for row in grouped.to_pylist():
    print(
        "events",
        row["nMuon"],
        row["nMuon_count"],
        row["MET_pt_sum"],
        row["MET_pt_max"],
        row["run_min"],
    )

one = pq.read_table(os.path.join(out, "part-1.parquet"))
run3 = one.filter(pc.field("run") == 3)
print("one", run3.num_rows, pc.sum(run3["nMuon"]).as_py())
