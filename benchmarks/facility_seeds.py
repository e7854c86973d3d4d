"""Stochastic greedy's sample size over seeds: facility location's start, case x seed x factor.

Run:  python benchmarks/facility_seeds.py [--factors 160 320 640 1280] [--seeds 5] [--only 1 5]

The defaults suite (``benchmarks/defaults.py``) runs one seed; stochastic greedy's picks
depend on it (its samples, and the fixed reference rows facility location is scored on).
So per case of that suite (up to 100k rows, where greedy runs) and per seed, in one process,
one BLAS thread: ``method="greedy"`` with that seed, then ``DataMask(diversity="facility",
seed=seed)`` with each sample factor (``SAMPLE_FACTOR``, rows per sample in units of n / S).
Gains are over a random selection of the same size scored on the same reference rows, in %
of greedy's. Writes ``results/facility_seeds.md``: the worst and mean per factor and case, and
each factor's worst over everything (the default is chosen by it, docs/defaults.md).
"""

from __future__ import annotations

import argparse
import json
import os
import platform
import sys
import time

import numpy as np

sys.path.insert(0, os.path.dirname(__file__))
sys.path.insert(0, os.path.join(os.path.dirname(__file__), ".."))

from defaults import CASES, load  # noqa: E402
from optimizer import pin_allocator  # noqa: E402

from datamask import DataMask, evaluate  # noqa: E402
from datamask.core import stochastic  # noqa: E402


def run_case(case, factors, seeds, near_duplicate="default"):
    """{factor: (gains %, fit seconds)} and greedy's seconds, over ``seeds``; ``near_duplicate``
    the redundancy filter of both fits (``"default"``: DataMask's own, 0.95)."""
    name, gen, kw, N, lam, ratio = case
    E, q = load(gen, kw, N)
    n = len(q)
    S = round(ratio * n)
    base = dict(lam=lam, ratio=ratio, diversity="facility")
    if near_duplicate != "default":
        base["near_duplicate"] = near_duplicate
    out, greedy_s = {f: ([], []) for f in factors}, []
    for seed in seeds:
        rows = np.random.default_rng(0).permutation(n)[:S]
        rand = evaluate(E, q, rows, lam=lam, diversity="facility", reference_size=2048, seed=seed)["objective"]
        t = time.perf_counter()
        ref = DataMask(method="greedy", seed=seed, **base).fit(E, q).objective_["objective"]
        greedy_s.append(time.perf_counter() - t)
        for f in factors:
            stochastic.SAMPLE_FACTOR = f  # read at call time
            t = time.perf_counter()
            got = DataMask(seed=seed, **base).fit(E, q).objective_["objective"]
            out[f][1].append(time.perf_counter() - t)
            out[f][0].append(100.0 * (got - rand) / (ref - rand))
    return out, greedy_s


def worst_by_factor(rows, factors, seeds) -> list:
    """Each factor's worst over every case and seed (the table the default is chosen by; also
    facility_seeds.json, which the README renders from)."""
    out = []
    for f in factors:
        worst = min(((g, r, s) for r in rows for g, s in zip(r["out"][f][0], seeds)), key=lambda x: x[0])
        ratio = max(rows, key=lambda r: np.median(r["out"][f][1]) / np.median(r["greedy"]))
        out.append(
            {
                "factor": f,
                "lowest_pct": float(worst[0]),
                "lowest_case": worst[1]["id"],
                "lowest_seed": worst[2],
                "below_995": int(sum(g < 99.5 for r in rows for g in r["out"][f][0])),
                "runs": len(rows) * len(seeds),
                "seeds": len(seeds),
                "largest_ratio": float(np.median(ratio["out"][f][1]) / np.median(ratio["greedy"])),
                "largest_case": ratio["id"],
            }
        )
    return out


def write(path, rows, factors, seeds, argv, wall, near_duplicate="default"):
    with open(path, "w") as fh:
        fh.write("# Stochastic greedy's sample size over seeds (facility location's default start)\n\n")
        fh.write(
            f"`python benchmarks/facility_seeds.py {' '.join(argv)}`: each case of the defaults suite up to "
            f'100k rows, seeds {seeds[0]}-{seeds[-1]}, `DataMask(diversity="facility", seed=seed)` with '
            '`SAMPLE_FACTOR` set to each factor, against `method="greedy"` with the same seed (the same '
            "reference rows), one process, one BLAS thread. Gain: objective minus that of a random selection "
            "of the same size on the same reference rows, in % of greedy's. Seconds: medians over the seeds. "
            f"Machine: {platform.machine()}, {os.cpu_count()} cores (load average "
            f"{os.getloadavg()[0]:.1f} at the end); whole run {wall:.0f} s. "
            + (
                "Both fits with DataMask's redundancy filter (0.95): the default fit filters stochastic greedy's "
                "picks and refills them, greedy filters the candidates first, so a gain here holds the two filter "
                "policies' difference as well as the sample's.\n\n"
                if near_duplicate == "default"
                else f"Both fits with `near_duplicate={near_duplicate}`.\n\n"
            )
        )
        fh.write("## Worst over every case and seed (the default is chosen by this table)\n\n")
        fh.write(
            "| factor | lowest % of greedy's gain (case, seed) | runs below 99.5% | largest fit / greedy (medians) |\n"
        )
        fh.write("|---|---|---|---|\n")
        for w in worst_by_factor(rows, factors, seeds):
            fh.write(
                f"| {w['factor']} | {w['lowest_pct']:.3f} ({w['lowest_case']}, seed {w['lowest_seed']}) | "
                f"{w['below_995']} of {w['runs']} | {w['largest_ratio']:.3f} ({w['largest_case']}) |\n"
            )
        fh.write("\n## Per case\n\n| case | greedy s | factor | lowest % | mean % | sd | fit s | per seed % |\n")
        fh.write("|---|---|---|---|---|---|---|---|\n")
        for r in rows:
            for f in factors:
                g, s = np.array(r["out"][f][0]), r["out"][f][1]
                fh.write(
                    f"| {r['id']} | {np.median(r['greedy']):.2f} | {f} | {g.min():.3f} | {g.mean():.3f} | "
                    f"{g.std(ddof=1) if len(g) > 1 else 0:.3f} | {np.median(s):.2f} | "
                    + " ".join(f"{v:.3f}" for v in g)
                    + " |\n"
                )


def main():
    ap = argparse.ArgumentParser(description=__doc__.split("\n")[0])
    ap.add_argument("--factors", type=int, nargs="+", default=[160, 320, 640, 1280])
    ap.add_argument("--seeds", type=int, default=5, help="seeds 0 .. SEEDS-1")
    ap.add_argument("--only", type=int, nargs="*", help="indices into the defaults suite's case list")
    ap.add_argument("--out", default=os.path.join(os.path.dirname(__file__), "results"))
    ap.add_argument("--name", default="facility_seeds", help="the results files' name (.md, .json)")
    ap.add_argument("--near-duplicate", default="default", type=lambda v: v if v == "default" else None if v == "none" else float(v),
                    help="the redundancy filter of both fits: 'default' (DataMask's), 'none', or a cosine")  # fmt: skip
    args = ap.parse_args()
    pin_allocator()
    idx = args.only if args.only is not None else [i for i, c in enumerate(CASES) if c[3] <= 100_000]
    seeds = list(range(args.seeds))
    t0, rows = time.time(), []
    for i in idx:  # every fit on one BLAS thread (DataMask's n_threads=1)
        name, _, _, N, lam, ratio = CASES[i]
        out, greedy_s = run_case(CASES[i], args.factors, seeds, args.near_duplicate)
        rows.append(dict(id=f"{name}, {N // 1000}k, lam {lam}, ratio {ratio}", out=out, greedy=greedy_s))
        print(rows[-1]["id"] + ": " + ", ".join(f"x{f} min {min(out[f][0]):.3f}%" for f in args.factors), flush=True)
    os.makedirs(args.out, exist_ok=True)
    path = os.path.join(args.out, args.name + ".md")
    write(path, rows, args.factors, seeds, sys.argv[1:], time.time() - t0, args.near_duplicate)
    summary = {
        "about": "Stochastic greedy's sample factor over seeds: the worst per factor (benchmarks/facility_seeds.py; "
        "per case in the .md).",
        "command": "python benchmarks/facility_seeds.py " + " ".join(sys.argv[1:]),
        "worst": worst_by_factor(rows, args.factors, seeds),
    }
    with open(os.path.join(args.out, args.name + ".json"), "w") as fh:
        json.dump(summary, fh, indent=1)
    print(path)


if __name__ == "__main__":
    main()
