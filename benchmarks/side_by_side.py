"""What ``select``'s side-by-side numbers cost: one split selected with and without them.

Run:  python benchmarks/side_by_side.py [--rows 20000 200000] [--dim 384] [--repeat 2]

Each ``select`` split also scores top-k and random at the selection's budget
(:func:`datamask.pipeline.side_by_side.split_side_by_side`). Per size, in one process, on
one synthetic split (:func:`datamask.core.synthetic.make_corpus`, float32) and the
default config, this times :func:`~datamask.pipeline.select_split.select_split` for
the default method and for ``--method topk``, each with and without the side-by-side
scoring, alternating so the ratios compare like with like on a shared machine (the best
of ``--repeat`` runs). Writes ``benchmarks/results/side_by_side.md``.
"""

from __future__ import annotations

import argparse
import os
import platform
import sys
import time

import numpy as np
import pyarrow as pa

sys.path.insert(0, os.path.join(os.path.dirname(__file__), ".."))

from datamask.core.synthetic import make_corpus  # noqa: E402
from datamask.pipeline.config import SelectConfig  # noqa: E402
from datamask.pipeline.select_split import select_split  # noqa: E402

OUT = os.path.join(os.path.dirname(__file__), "results", "side_by_side.md")


def split_table(n, dim):
    c = make_corpus(n_rows=n, dim=dim, seed=0)
    E = np.ascontiguousarray(c["embedding"], dtype=np.float32)
    return pa.table(
        {
            "id": pa.array(np.arange(n, dtype=np.int64)),
            "embedding": pa.FixedSizeListArray.from_arrays(pa.array(E.reshape(-1)), dim),
            "quality": pa.array(np.asarray(c["quality"], dtype=np.float32)),
        }
    )


def run(table, method, side):
    cfg = SelectConfig(method=method, split_size=table.num_rows, quiet=True)
    t0 = time.perf_counter()
    s = select_split(table, cfg, 0, "bench", side_by_side=side)
    total = time.perf_counter() - t0
    scoring = s.record.get("side_by_side", {}).get("seconds", 0.0)
    return total, scoring


def main(argv=None):
    ap = argparse.ArgumentParser(description=__doc__.splitlines()[0])
    ap.add_argument("--rows", type=int, nargs="+", default=[20_000, 200_000])
    ap.add_argument("--dim", type=int, default=384)
    ap.add_argument("--repeat", type=int, default=2)
    ap.add_argument("--out", default=OUT)
    a = ap.parse_args(argv)
    lines = [
        "# Side-by-side scoring cost (`benchmarks/side_by_side.py`)",
        "",
        f"One split of synthetic float32 rows x {a.dim}-d, default `SelectConfig` (ratio, lam, diversity),",
        "`select_split` with and without the side-by-side scoring (top-k and random at the same budget,",
        f"every number of each of the three subsets); best of {a.repeat} runs, alternated.",
        f"Machine: {platform.processor() or platform.machine()}, {os.cpu_count()} cores, "
        f"load average at start {os.getloadavg()[0]:.1f}.",
        "",
        "| rows | method | split without (s) | split with (s) | scoring (s) | scoring / split without |",
        "|---:|---|---:|---:|---:|---:|",
    ]
    for n in a.rows:
        table = split_table(n, a.dim)
        for method in ("datamask", "topk"):
            run(table.slice(0, min(n, 2000)), method, True)  # warm imports and kernels
            off, on, sc = [], [], []
            for _ in range(a.repeat):
                off.append(run(table, method, False)[0])
                t, s = run(table, method, True)
                on.append(t)
                sc.append(s)
            row = f"| {n:,} | {method} | {min(off):.2f} | {min(on):.2f} | {min(sc):.2f} | {min(sc) / min(off):.0%} |"
            print(row, flush=True)
            lines.append(row)
    lines.append("")
    lines.append(f"Load average at end {os.getloadavg()[0]:.1f}.")
    with open(a.out, "w") as f:
        f.write("\n".join(lines) + "\n")
    print(f"wrote {a.out}")


if __name__ == "__main__":
    main()
