"""Token budgets: DATAMASK's objective at a token budget against greedy, relaxed, topk and random.

Run:  nice -n 5 python benchmarks/tokens.py [--rows 20000] [--small 5000] [--out benchmarks/results]

Corpora (``datamask.core.synthetic.make_corpus``, d = 384), each with lognormal token
counts (median e^6 ~ 400 tokens, sigma 1.2) and 0.1% of 50k-token documents:

* ``default``: make_corpus's defaults (50 Zipf-sized topics, 20 near-duplicate groups);
* ``clustered``: 10 topics, 40 near-duplicate groups holding 30% of the rows;
* ``default, long=good``: the default corpus with lengths that grow with quality (rank
  correlation ~0.5), as with educational-quality classifiers that favour long pages.

Every method keeps at most 10% of the corpus's tokens (one partition, lam 0.5, the default
pruning 0.5 for the DataMask solvers). Reported: the objective f(U), its gain over random as
a % of greedy's gain, rows and tokens kept, seconds; and pg's seconds per step under the
token budget against the same run with a row budget of as many rows (its speed). Pairwise
on ``--rows`` rows; facility location and DiSF on ``--small`` rows of the default corpus.

Writes ``tokens.md`` to ``--out``.
"""

from __future__ import annotations

import argparse
import os
import platform
import sys
import time

import numpy as np

sys.path.insert(0, os.path.join(os.path.dirname(__file__), ".."))

from datamask import DataMask  # noqa: E402
from datamask.core.synthetic import make_corpus  # noqa: E402
from datamask.core.tokens import fill  # noqa: E402
from datamask.estimator.evaluate import evaluate  # noqa: E402

SHARE, LAM = 0.1, 0.5
# The settings tokens.md names, given as 0.3's defaults differ (lam 0.7, no pruning, the redundancy
# filter): lam 0.5, pruning 0.5, no near-duplicate filter.
FIXED = dict(lam=LAM, prune=0.5, near_duplicate=None)


def lengths(n, seed, quality=None):
    """Lognormal token counts with 0.1% 50k-token documents; ``quality``: sorted to follow it."""
    rng = np.random.default_rng(seed)
    t = np.maximum(1, rng.lognormal(6.0, 1.2, size=n)).astype(np.int64)
    t[rng.choice(n, max(1, n // 1000), replace=False)] = 50_000
    if quality is not None:  # lengths that grow with quality, with noise (rank correlation ~0.5)
        key = np.argsort(np.argsort(quality)) + rng.normal(0, 0.35 * n, size=n)
        t = np.sort(t)[np.argsort(np.argsort(key))]
    return t


def corpus(name, n, seed=0):
    if name == "clustered":
        c = make_corpus(n, 384, n_topics=10, n_dup_groups=40, dup_fraction=0.3, seed=seed)
    else:
        c = make_corpus(n, 384, seed=seed)
    t = lengths(n, seed + 1, c["quality"] if "long=good" in name else None)
    return c["embedding"], c["quality"], t


def run_case(label, E, q, t, diversity):
    T = int(SHARE * t.sum())
    rows = []

    def add(method, mask, seconds, steps=None):
        r = evaluate(E, q, mask, lam=LAM, diversity=diversity, reference_size=2048)
        rows.append(
            {
                "method": method,
                "objective": r["objective"],
                "quality": r["quality"],
                "diversity": r["diversity"],
                "rows": int(mask.sum()),
                "tokens": int(t[mask].sum()),
                "seconds": seconds,
                "steps": steps,
            }
        )

    for solver in ("datamask", "greedy", "relaxed"):
        if solver == "relaxed" and diversity == "facility":
            continue
        t0 = time.perf_counter()
        est = DataMask(token_budget=T, diversity=diversity, method=solver, **FIXED).fit(E, q, lengths=t)
        add(solver, est.mask_, time.perf_counter() - t0, est.n_steps_)
        if solver == "datamask":
            pg_tok = (est.fit_seconds_, est.n_steps_, int(est.mask_.sum()))
    t0 = time.perf_counter()
    m = np.zeros(len(q), dtype=bool)
    m[fill(np.argsort(-q, kind="stable"), t.astype(np.float64), T)] = True
    add("topk", m, time.perf_counter() - t0)
    t0 = time.perf_counter()
    m = np.zeros(len(q), dtype=bool)
    m[fill(np.random.default_rng(0).permutation(len(q)), t.astype(np.float64), T)] = True
    add("random", m, time.perf_counter() - t0)
    # pg's speed: the same fit with a row budget of as many rows as the token run kept
    est = DataMask(budget=pg_tok[2], diversity=diversity, **FIXED).fit(E, q)
    speed = {
        "tokens_ms": 1e3 * pg_tok[0] / max(1, pg_tok[1]),
        "rows_ms": 1e3 * est.fit_seconds_ / max(1, est.n_steps_),
        "rows_steps": est.n_steps_,
        "tokens_steps": pg_tok[1],
    }
    by = {r["method"]: r for r in rows}
    ref = by["greedy"]["objective"] - by["random"]["objective"]
    for r in rows:
        r["gain"] = 100.0 * (r["objective"] - by["random"]["objective"]) / ref if ref > 0 else float("nan")
    return {
        "label": label,
        "diversity": diversity,
        "n": len(q),
        "T": T,
        "corpus_tokens": int(t.sum()),
        "rows": rows,
        "speed": speed,
    }


def table(case):
    out = [
        f"### {case['label']}, {case['diversity']}, {case['n']:,} rows: T = {case['T']:,} of "
        f"{case['corpus_tokens']:,} tokens",
        "",
        "| method | objective | % of greedy's gain | quality | diversity | rows | tokens | T - tokens | seconds |",
        "|---|---|---|---|---|---|---|---|---|",
    ]
    for r in case["rows"]:
        out.append(
            f"| {r['method']} | {r['objective']:.5f} | {r['gain']:.1f} | {r['quality']:.4f} | "
            f"{r['diversity']:.5f} | {r['rows']:,} | {r['tokens']:,} | {case['T'] - r['tokens']:,} | "
            f"{r['seconds']:.2f} |"
        )
    s = case["speed"]
    out += [
        "",
        f"pg: {s['tokens_ms']:.1f} ms per step under the token budget ({s['tokens_steps']} steps), "
        f"{s['rows_ms']:.1f} ms with a row budget of as many rows ({s['rows_steps']} steps).",
        "",
    ]
    return "\n".join(out)


def main():
    ap = argparse.ArgumentParser(description=__doc__.splitlines()[0])
    ap.add_argument("--rows", type=int, default=20_000)
    ap.add_argument("--small", type=int, default=5_000)
    ap.add_argument("--out", default=os.path.join(os.path.dirname(__file__), "results"))
    a = ap.parse_args()
    t0 = time.perf_counter()
    cases = []
    for name in ("default", "clustered", "default, long=good"):
        cases.append(run_case(name, *corpus(name, a.rows), "pairwise"))
        print(table(cases[-1]), flush=True)
    for div in ("facility", "disf"):
        cases.append(run_case("default", *corpus("default", a.small), div))
        print(table(cases[-1]), flush=True)
    head = [
        "# Token budgets: DATAMASK against the baselines at equal tokens",
        "",
        f"Command: `nice -n 5 python benchmarks/tokens.py --rows {a.rows} --small {a.small}` "
        f"({platform.machine()}, {os.cpu_count()} cores shared with other jobs, "
        f"{time.perf_counter() - t0:.0f} s in all). Every method keeps at most 10% of the corpus's tokens; "
        "lam 0.5; the DataMask solvers with their defaults (pruning 0.5; pg: its default start, from the "
        "relaxed solution for pairwise and DiSF and from quality for facility location, and its default "
        "step budget). "
        "`% of greedy's gain`: (f - f_random) / (f_greedy - f_random). See docs/tokens.md.",
        "",
    ]
    with open(os.path.join(a.out, "tokens.md"), "w") as f:
        f.write("\n".join(head + [table(c) for c in cases]))


if __name__ == "__main__":
    main()
