"""Facility location's reference set, by size, on the diversity suite's recheck cells (issue 47).

The default selection (``datamask select`` with no options: facility location, ``lam`` 0.7, no
pruning, the redundancy filter) scores coverage on ``reference_size`` rows of the split (2,048);
its fit's time at 1M rows grows with it (the lists' products and the first picks' products are
rows x reference rows). This measures what a smaller or larger set does to the selection, on
the cells of ``diversity.py --recheck`` (the seven generated shapes at 20,000 rows and the real
corpus man with MiniLM and static embeddings, ratios 0.05 / 0.1 / 0.3): each size selects with
the default's settings and ``solver_params={"reference_size": size}``, is scored as the suite
scores (``diversity.scores``: coverage and near-duplicates on 4,096 sampled rows, not the
reference set), and is put in the recheck's cell in place of the default's record, whose other
candidates (top-k, random and the rest: ``diversity_recheck.json``) decide whether it passes
(``diversity_report.criteria``: on the quality-coverage front, coverage >= top-k's and >=
random's - 0.01, near-duplicates <= random's + 0.02, quality >= the midpoint).

    python benchmarks/reference_size.py                 # sizes 1024, 2048, 4096
    python benchmarks/reference_size.py --render        # the .md from the .json

Writes ``benchmarks/results/reference_size.json`` and ``reference_size.md``. One process, one
thread; the real corpus is built by ``suite_corpora.py`` under ``--work`` when missing.
"""

from __future__ import annotations

import argparse
import json
import os
import platform
import subprocess
import sys
import time
from pathlib import Path

os.environ.setdefault("OMP_NUM_THREADS", "1")
ROOT = Path(__file__).resolve().parents[1]
sys.path.insert(0, str(ROOT))

import numpy as np  # noqa: E402
import pandas as pd  # noqa: E402

from benchmarks import diversity as D  # noqa: E402
from benchmarks.diversity_report import criteria  # noqa: E402

RESULTS = ROOT / "benchmarks" / "results"
SIZES = (1024, 2048, 4096)
DEFAULT_SIZE = 2048


def run(sizes, work: Path, out: Path) -> None:
    import pyarrow as pa

    from datamask.core.kmeans import assign, fit_kmeans
    from datamask.methods import select
    from datamask.pipeline.config import SelectConfig

    base = json.loads((out / "diversity_recheck.json").read_text())
    default = D.default_candidate()
    settings = next(s for name, s, _ in D.CANDIDATES if name == default)
    real = tuple(base["meta"]["real"])
    cases = [c for c in D.cases(work) if not c[0].startswith(D.REAL) or c[0].split(" (")[0] in real]
    t0, load0 = time.time(), os.getloadavg()[0]
    records = []
    for case, load in cases:
        E, q = load()
        clusters = np.asarray(assign(E, fit_kmeans(E, D.K, seed=0))[0], dtype=np.int64)
        for ratio in D.RATIOS:
            masks, secs = {}, {}
            for size in sizes:
                cfg = SelectConfig.from_dict(
                    {"ratio": ratio, **D.BASE, **settings, "solver_params": {"n_threads": 1, "reference_size": size}}
                )
                t = time.perf_counter()
                table = pa.table({cfg.domain_column: clusters})
                masks[size] = np.asarray(select(E, q, cfg, 0, table=table).mask, bool)
                secs[size] = time.perf_counter() - t
            for size, sc in D.scores(E, q, masks, clusters, D.K).items():
                records.append({"case": case, "ratio": ratio, "reference_size": size, "seconds": secs[size], **sc})
            print(f"{case} ratio {ratio}: {len(sizes)} sizes", flush=True)
    head = subprocess.run(["git", "-C", str(ROOT), "rev-parse", "--short", "HEAD"], capture_output=True, text=True)
    meta = {
        "machine": f"{platform.machine()}, {os.cpu_count()} cores",
        "load": [load0, os.getloadavg()[0]],
        "seconds": time.time() - t0,
        "commit": head.stdout.strip(),
        "default": default,
        "default_size": DEFAULT_SIZE,
        "sizes": list(sizes),
        "cells_from": f"diversity_recheck.json ({base['meta']['after']})",
        "sample": D.SAMPLE,
    }
    (out / "reference_size.json").write_text(json.dumps({"meta": meta, "records": records}, indent=1))
    render(out)


def cells(data: dict, base: dict) -> pd.DataFrame:
    """One row per (case, ratio, size): the size's numbers, its criteria in the recheck's cell."""
    default = data["meta"]["default"]
    others = pd.DataFrame(base["records"])
    rows = []
    for r in data["records"]:
        cell = others[(others.case == r["case"]) & (others.ratio == r["ratio"])]
        cell = pd.concat([cell[cell.candidate != default], pd.DataFrame([{**r, "candidate": default}])])
        c = criteria(cell).loc[default]
        rows.append({**{k: r[k] for k in ("case", "ratio", "reference_size", "quality_norm", "coverage", "near_dup",
                                          "seconds")}, "passes": bool(c["all"]), "front": bool(c["front"]),
                     **{k: float(c[k]) for k in c.index if str(k).startswith("m_")}})  # fmt: skip
    return pd.DataFrame(rows)


def summary(data: dict, base: dict) -> dict:
    """Per size: cells passed, on the front, worst margins, means, seconds (what the docs quote)."""
    df = cells(data, base)
    out = {}
    for size, g in df.groupby("reference_size"):
        out[int(size)] = {
            "cells": int(len(g)),
            "passed": int(g["passes"].sum()),
            "front": int(g["front"].sum()),
            "quality_norm": float(g["quality_norm"].mean()),
            "coverage": float(g["coverage"].mean()),
            "worst_coverage_vs_topk": float(g["m_coverage_vs_topk"].min()),
            "worst_coverage_vs_random": float(g["m_coverage_vs_random"].min()),
            "worst_quality_midpoint": float(g["m_quality_midpoint"].min()),
            "seconds": float(g["seconds"].sum()),
        }
    return out


def render(out: Path) -> None:
    data = json.loads((out / "reference_size.json").read_text())
    base = json.loads((out / "diversity_recheck.json").read_text())
    m, s, df = data["meta"], summary(data, base), cells(data, base)
    (out / "reference_size_summary.json").write_text(json.dumps({"meta": m, "sizes": s}, indent=1))
    lines = [
        "# Facility location's reference set, by size (`benchmarks/reference_size.py`)",
        "",
        f"Rendered from `reference_size.json`. The default selection ({m['default']}) with each `reference_size` "
        f"on the {s[m['default_size']]['cells']} cells of {m['cells_from']}, each size's record in place of the "
        "default's among that cell's candidates (a cell passes as in `diversity.md`: on the quality-coverage front, "
        "coverage at least top-k's and random's less 0.01, near-duplicates at most random's plus 0.02, quality at "
        f"least the midpoint of random's and top-k's). Coverage on {m['sample']:,} sampled rows, not the reference "
        f"set. Code at {m['commit']}; machine {m['machine']}, load {m['load'][0]:.1f} at the start and "
        f"{m['load'][1]:.1f} at the end (one process, one thread).",
        "",
        "| reference_size | cells passed | on the front | mean quality (norm.) | mean coverage | worst coverage - top-k "
        "| worst coverage vs random - 0.01 | worst quality margin | seconds, all cells |",
        "| --- | --- | --- | --- | --- | --- | --- | --- | --- |",
    ]
    for size, v in s.items():
        name = f"{size:,} (the default)" if int(size) == m["default_size"] else f"{size:,}"
        lines.append(
            f"| {name} | {v['passed']}/{v['cells']} | {v['front']}/{v['cells']} | {v['quality_norm']:.4f} | "
            f"{v['coverage']:.4f} | {v['worst_coverage_vs_topk']:+.4f} | {v['worst_coverage_vs_random']:+.4f} | "
            f"{v['worst_quality_midpoint']:+.4f} | {v['seconds']:.1f} |"
        )
    lines += ["", "## Cell by cell", "", "| case | ratio | " + " | ".join(
        f"{z:,}: quality, coverage, passes" for z in m["sizes"]) + " |", "|---|---|" + "---|" * len(m["sizes"])]  # fmt: skip
    for (case, ratio), g in df.groupby(["case", "ratio"], sort=False):
        g = g.set_index("reference_size")
        vals = [f"{g.at[z, 'quality_norm']:.4f}, {g.at[z, 'coverage']:.4f}, {'yes' if g.at[z, 'passes'] else 'no'}"
                for z in m["sizes"]]  # fmt: skip
        lines.append(f"| {case} | {ratio} | " + " | ".join(vals) + " |")
    (out / "reference_size.md").write_text("\n".join(lines) + "\n")


def main() -> None:
    ap = argparse.ArgumentParser(description=__doc__.split("\n")[0])
    ap.add_argument("--work", default="/work/cache/suite", help="the suite corpora's cache (suite_corpora.py)")
    ap.add_argument("--out", default=str(RESULTS))
    ap.add_argument("--sizes", default=",".join(map(str, SIZES)))
    ap.add_argument("--render", action="store_true", help="only render the .md from the .json")
    args = ap.parse_args()
    if args.render:
        return render(Path(args.out))
    run([int(x) for x in args.sizes.split(",")], Path(args.work), Path(args.out))


if __name__ == "__main__":
    main()
