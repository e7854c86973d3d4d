"""What ``select``'s side-by-side numbers cost: one split selected with and without them.

Run:  python benchmarks/side_by_side.py [--rows 20000 200000] [--dim 384] [--repeat 3]
                                        [--base DIR] [--error-seeds 16]

Each ``select`` split also scores top-k and random at the selection's budget
(:func:`datamask.pipeline.side_by_side.split_side_by_side`). Per size, on one synthetic split
(:func:`datamask.core.synthetic.make_corpus`, float32) and the default config, this times
:func:`~datamask.pipeline.select_split.select_split` for the default method and for
``--method topk``, each with and without the side-by-side scoring (the best of ``--repeat``
rounds). ``--base DIR``: a checkout of earlier code (``git worktree add DIR main``), measured
in the same rounds, alternating with this one, each round one process per checkout, so the
two compare like with like on a shared machine. Then the numbers themselves: each code's
cells on the default method's split, and the spread of this code's sampled cells (coverage,
near-duplicate share) over ``--error-seeds`` seeds of the sample, on the same three subsets.
Writes ``benchmarks/results/side_by_side.md``.
"""

from __future__ import annotations

import argparse
import json
import os
import platform
import subprocess
import sys
import time

import numpy as np

HERE = os.path.abspath(os.path.join(os.path.dirname(__file__), ".."))
OUT = os.path.join(HERE, "benchmarks", "results", "side_by_side.md")
CELLS = ("objective", "quality_norm", "quality", "pairwise", "facility", "near_duplicates")
HEADS = ("objective", "quality (0-1)", "quality (raw)", "pairwise", "coverage", "near-dup share")


def split_table(n, dim):
    import pyarrow as pa

    from datamask.core.synthetic import make_corpus

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
    from datamask.pipeline.config import SelectConfig

    try:
        from datamask.pipeline.select_split import select_split
    except ImportError:  # a --base checkout from before the stages layer
        from datamask.pipeline.stages.select_split import select_split

    cfg = SelectConfig(method=method, split_size=table.num_rows, quiet=True)
    t0 = time.perf_counter()
    s = select_split(table, cfg, 0, "bench", side_by_side=side)
    rec = s[1] if isinstance(s, tuple) else s.record  # (selection, SplitRecord) since 0.3; a dict before
    return time.perf_counter() - t0, rec.get("side_by_side", {})


def worker(rows, dim):
    """One round of one checkout (the datamask on ``sys.path``): per size and method, the
    split without and with the scoring; the default method's cells."""
    out = {}
    for n in rows:
        table = split_table(n, dim)
        out[n] = {}
        for method in ("datamask", "topk"):
            run(table.slice(0, min(n, 2000)), method, True)  # warm imports and kernels
            off, _ = run(table, method, False)
            on, side = run(table, method, True)
            out[n][method] = {"off": off, "on": on, "scoring": side.get("seconds", 0.0), "cells": side}
    return out


def rounds(trees, rows, dim, repeat):
    """``{label: {n: {method: [round records]}}}``, each round one process per checkout, in
    alternating order."""
    res = {label: {n: {"datamask": [], "topk": []} for n in rows} for label, _ in trees}
    for i in range(repeat):
        for label, root in trees if i % 2 == 0 else trees[::-1]:
            cmd = [sys.executable, os.path.abspath(__file__), "--worker", "--code", root, "--dim", str(dim)]
            cmd += ["--rows", *map(str, rows)]
            done = subprocess.run(cmd, capture_output=True, text=True, check=True)
            got = json.loads(done.stdout.strip().splitlines()[-1])
            for n in rows:
                for method, rec in got[str(n)].items():
                    res[label][n][method].append(rec)
                    print(f"round {i + 1} {label} {n:,} {method}: {rec['off']:.2f} s without, "
                          f"{rec['on']:.2f} s with, scoring {rec['scoring']:.2f} s", flush=True)  # fmt: skip
    return res


def sampling_error(n, dim, seeds):
    """This code's coverage and near-duplicate share of the three subsets over ``seeds``
    seeds of the sample: ``{subset: (coverage values, share values)}`` and the sample."""
    from datamask.core.scorecard import Scorecard, score_sample
    from datamask.methods import select_mask
    from datamask.pipeline.config import SelectConfig
    from datamask.pipeline.schema import Columns, check_table

    try:
        from datamask.pipeline.select_split import select_split
    except ImportError:  # a --base checkout from before the stages layer
        from datamask.pipeline.stages.select_split import select_split

    table = split_table(n, dim)
    cfg = SelectConfig(split_size=n, quiet=True)
    s = select_split(table, cfg, 0, "bench", side_by_side=False)
    masks = {"selection": (s[0] if isinstance(s, tuple) else s).mask}
    E, q = check_table(table, "bench", Columns.from_config(cfg), 0, vectors=False)
    for m in ("topk", "random"):
        masks[m] = select_mask(E, q, cfg, 0, method=m)
    reference_size = cfg.solver("reference_size")  # a solver_params key (0.3)
    r = score_sample(max(int(m.sum()) for m in masks.values()), reference_size)
    vals = {k: ([], []) for k in masks}
    for seed in range(seeds):
        card = Scorecard(
            E,
            q,
            reference_size=reference_size,
            seed=seed,
            sample=r,
            diversities=("pairwise", "facility"),
            norms="own",
        )
        for k, s in card.score_many(masks).items():
            vals[k][0].append(s["facility"])
            vals[k][1].append(s["near_duplicates"])
    return vals, r


def cost_lines(res, rows):
    lines = [
        "| rows | method | code | split without (s) | split with (s) | scoring (s) | scoring / split without |",
        "|---:|---|---|---:|---:|---:|---:|",
    ]
    for n in rows:
        for method in ("datamask", "topk"):
            for label in res:
                recs = res[label][n][method]
                off, on, sc = (min(r[k] for r in recs) for k in ("off", "on", "scoring"))
                lines.append(f"| {n:,} | {method} | {label} | {off:.2f} | {on:.2f} | {sc:.3f} | {sc / off:.0%} |")
    return lines


def cell_lines(res, rows, errors):
    lines = [
        "| rows | subset | code | " + " | ".join(HEADS) + " |",
        "|---:|---|---|" + "---:|" * len(HEADS),
    ]
    for n in rows:
        for subset in ("selection", "topk", "random"):
            for label in res:
                cells = res[label][n]["datamask"][-1]["cells"][subset]
                lines.append(f"| {n:,} | {subset} | {label} | " + " | ".join(f"{cells[c]:.4f}" for c in CELLS) + " |")
            if n in errors:
                (cov, near), r = errors[n][0][subset], errors[n][1]
                lines.append(
                    f"| {n:,} | {subset} | after: mean ± sd over {len(cov)} samples of {r} rows | | | | | "
                    f"{np.mean(cov):.4f} ± {np.std(cov, ddof=1):.4f} | {np.mean(near):.4f} ± {np.std(near, ddof=1):.4f} |"
                )
        for other in ("topk", "random") if n in errors else ():
            a, b = errors[n][0]["selection"], errors[n][0][other]
            cells = []
            for x, y in zip(a, b):
                d = np.subtract(x, y)
                alone = np.hypot(np.std(x, ddof=1), np.std(y, ddof=1))  # the sd of independent samples
                cells.append(f"{d.mean():+.4f} ± {d.std(ddof=1):.4f} ({alone:.4f})")
            lines.append(f"| {n:,} | selection − {other} | after: difference | | | | | {cells[0]} | {cells[1]} |")
    return lines


def main(argv=None):
    ap = argparse.ArgumentParser(description=__doc__.splitlines()[0])
    ap.add_argument("--rows", type=int, nargs="+", default=[20_000, 200_000])
    ap.add_argument("--dim", type=int, default=384)
    ap.add_argument("--repeat", type=int, default=3)
    ap.add_argument("--base", help="a checkout of earlier code, measured alternately with this one")
    ap.add_argument("--error-seeds", type=int, default=16, help="seeds of the sample for the cells' spread (0: none)")
    ap.add_argument("--out", default=OUT)
    ap.add_argument("--worker", action="store_true", help=argparse.SUPPRESS)
    ap.add_argument("--code", default=HERE, help=argparse.SUPPRESS)
    a = ap.parse_args(argv)
    sys.path.insert(0, os.path.abspath(a.code))
    if a.worker:
        import datamask

        assert datamask.__file__.startswith(os.path.abspath(a.code)), datamask.__file__  # this checkout's code
        print(json.dumps(worker(a.rows, a.dim)))
        return
    trees = [("before", os.path.abspath(a.base)), ("after", HERE)] if a.base else [("after", HERE)]
    load0 = os.getloadavg()[0]
    res = rounds(trees, a.rows, a.dim, a.repeat)
    errors = {n: sampling_error(n, a.dim, a.error_seeds) for n in a.rows} if a.error_seeds > 1 else {}
    lines = [
        "# Side-by-side scoring cost (`benchmarks/side_by_side.py`)",
        "",
        f"One split of synthetic float32 rows x {a.dim}-d, default `SelectConfig` (ratio, lam, diversity),",
        "`select_split` with and without the side-by-side scoring (top-k and random at the same budget,",
        f"every number of each of the three subsets); best of {a.repeat} rounds"
        + (", `before` and `after` alternating, one process per code and round." if a.base else "."),
        f"Machine: {platform.processor() or platform.machine()}, {os.cpu_count()} cores, "
        f"load average at start {load0:.1f}.",
        "",
        *cost_lines(res, a.rows),
        "",
        "The cells of the default method's split (its last round), and this code's sampled cells over",
        "seeds of the sample on the same three subsets: their sd is the sampling error of one run. The",
        "differences are taken per seed (in brackets: the sd if the two subsets' samples were independent).",
        "",
        *cell_lines(res, a.rows, errors),
        "",
        f"Load average at end {os.getloadavg()[0]:.1f}.",
    ]
    with open(a.out, "w") as f:
        f.write("\n".join(lines) + "\n")
    print(f"wrote {a.out}")


if __name__ == "__main__":
    main()
